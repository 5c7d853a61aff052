package reservation

import "time"

// AdmissionState is where a buyer the API's gate let through stands before the Claim step
// decides.
type AdmissionState string

const (
	// Admitted: the gate let the buyer through; the saga is starting or has not claimed yet.
	Admitted AdmissionState = "ADMITTED"
	// AdmissionRejected: the saga's claim turned the buyer away (the seats were taken after
	// all, or the request was refused): nothing was ever held.
	AdmissionRejected AdmissionState = "REJECTED"
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
}

// AdmissionRequest asks the gate to let a buyer through for seats: no seat may be held by
// anyone else or leased to another buyer until LeaseUntil.
type AdmissionRequest struct {
	Admission  Admission
	LeaseUntil time.Time
}

// AdmitResult is how the gate answered a buyer it did not refuse.
type AdmitResult struct {
	// Admitted: the leases and the admission record are written; the caller starts the
	// execution.
	Admitted bool
	// HeldByRequester: a seat is already held by this very reservation, so the request is a
	// replay of one the Claim step has answered; nothing was written and the reservation is
	// the answer.
	HeldByRequester bool
	// Rejected is the stored admission of a replayed request the saga already turned away;
	// nothing was written.
	Rejected *Admission
}
