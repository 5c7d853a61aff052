package reservation

import (
	"fmt"
	"strconv"
	"time"
)

// AdmissionState is where a buyer the API's gate let through stands before the Claim step
// decides.
type AdmissionState string

const (
	// Admitted: the gate let the buyer through; the saga is starting or has not claimed yet.
	Admitted AdmissionState = "ADMITTED"
	// AdmissionRejected: the saga's claim turned the buyer away (the seats were taken after
	// all, or the request was refused): nothing was ever held.
	AdmissionRejected AdmissionState = "REJECTED"
	// AdmissionCanceled: the customer canceled before the Claim step held anything (a queued
	// start, or one the saga had not reached); the claim refuses to hold for it and the gate
	// never lets the request through again.
	AdmissionCanceled AdmissionState = "CANCELED"
)

// Admission is the record of one buyer the gate let through, written in the same transaction
// as the seats' leases. It answers replays and status reads until the Claim step writes the
// reservation, so the API never asks Step Functions.
type Admission struct {
	ReservationID string
	CustomerID    string
	EventID       string
	SeatIDs       []string
	Amount        int64
	// Currency is ISO 4217 in upper case, as reservations store it.
	Currency string
	// RequestHash is the API's fingerprint of the request (api.RequestHash).
	RequestHash string
	State       AdmissionState
	AdmittedAt  time.Time
	// HoldSlot is the customer's hold slot the admission took (HoldSlotKey), -1 without a cap.
	HoldSlot int
	// StartQueued: Step Functions would not start the execution at once, so its start waits
	// for the starter.
	StartQueued bool
}

// AdmissionRequest asks the gate to let a buyer through for seats: no seat may be held by
// anyone else or leased to another buyer until LeaseUntil, and the customer may have at most
// MaxActive reservations at once, each taking one of the customer's hold slots until SlotUntil
// (the latest its hold can end) or until it is given back.
type AdmissionRequest struct {
	Admission  Admission
	LeaseUntil time.Time
	// MaxActive is the customer's cap on active reservations (no cap when zero).
	MaxActive int
	SlotUntil time.Time
}

// HoldLimit says that a customer already has as many active reservations as the cap allows;
// nothing was written.
type HoldLimit struct {
	CustomerID string
	Limit      int
}

func (e *HoldLimit) Error() string {
	return fmt.Sprintf("customer %s already has %d active reservations, the most allowed", e.CustomerID, e.Limit)
}

// HoldSlotKey names a customer's k-th hold slot in the Admissions table. Neither a customer id
// nor a reservation id contains '#', so a slot key never names an admission.
func HoldSlotKey(customerID string, k int) string {
	return "slot#" + customerID + "#" + strconv.Itoa(k)
}

// AdmitResult is how the gate answered a buyer it did not refuse.
type AdmitResult struct {
	// Admitted: the leases and the admission record are written; the caller starts the
	// execution. HoldSlot is the hold slot it took (-1 without a cap).
	Admitted bool
	HoldSlot int
	// Claimed: the Claim step wrote this very reservation, so the request is a replay of one
	// it answered, however the hold has ended since; nothing was written (no lease, no hold
	// slot) and the stored reservation is the answer.
	Claimed bool
	// Rejected is the stored admission of a replayed request the saga already turned away;
	// nothing was written.
	Rejected *Admission
}
