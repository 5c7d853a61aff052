package api

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// StepFunctions is the part of the Step Functions API the handler uses. *sfn.Client satisfies
// it, against AWS or the local engine alike.
type StepFunctions interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, optFns ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, optFns ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
}

// ReservationStore reads reservations and records a customer's cancel. *inventory.Store
// satisfies it.
type ReservationStore interface {
	// Get returns an error matching *reservation.NotFound when no reservation has the id (the
	// Claim step has not written it yet, or the buyer lost the race and nothing was ever
	// written).
	Get(ctx context.Context, reservationID string) (reservation.Reservation, error)
	// Cancel records reservation.Reservation.Cancel in a write fenced by g that bumps the
	// version. When the cancel is already recorded it writes nothing and returns the stored
	// reservation. It is refused with *reservation.GuardFailed once the seats are CONFIRMED
	// and with *reservation.StaleVersion when g is not the stored version.
	Cancel(ctx context.Context, reservationID string, g reservation.Guard) (reservation.Reservation, error)
}

// Admissions is the admission gate (reservation.AdmissionRequest) and the records it keeps of
// the buyers it let through. *inventory.Store satisfies it.
type Admissions interface {
	Admit(ctx context.Context, req reservation.AdmissionRequest) (reservation.AdmitResult, error)
	// GetAdmission reads an admission (strongly consistent); ok is false when there is none.
	GetAdmission(ctx context.Context, reservationID string) (a reservation.Admission, ok bool, err error)
	// QueueStart records the input of an execution Step Functions would not start at once, for
	// the starter to start from the Admissions stream, and keeps the admission's seat leases
	// until leaseUntil and its hold slot until slotUntil.
	QueueStart(ctx context.Context, a reservation.Admission, input string, leaseUntil, slotUntil time.Time) error
	// CancelAdmission records a customer's cancel of admission a before the Claim step holds
	// anything and gives its seats and hold slot back; it returns the admission as stored
	// (CANCELED, or REJECTED when the saga turned the buyer away first) and whether this call
	// wrote the cancel. Its error wraps inventory.ErrClaimed when the reservation exists: the
	// cancel is then that reservation's.
	CancelAdmission(ctx context.Context, a reservation.Admission) (reservation.Admission, bool, error)
	// MarkStartBacklog records that starts wait in the queue (inventory.StartBacklogKey, for
	// inventory.StartBacklogWindow), which FirstRead.StartBacklogUntil reads back.
	MarkStartBacklog(ctx context.Context) error
}

// SeatCatalog answers the admission pre-check from an eventually consistent read of the Seats
// table. It may be stale in either direction; the Claim step's conditional write decides.
type SeatCatalog interface {
	// Seats returns the named seats of the event that exist, keyed by seat id.
	Seats(ctx context.Context, eventID string, seatIDs []string) (map[string]CatalogSeat, error)
	// EventExists reports whether the event has any seat at all.
	EventExists(ctx context.Context, eventID string) (bool, error)
}

// AdmissionAndSeats is what a SeatCatalog may also do: read a reservation's admission
// (strongly consistent, as Admissions.GetAdmission reads it) and the seats of its request (as
// Seats reads them) in one request, so that a first POST, the common one, costs one read
// instead of two. found is false when there is no admission.
type AdmissionAndSeats interface {
	AdmissionAndSeats(ctx context.Context, reservationID, eventID string, seatIDs []string) (FirstRead, error)
}

// CatalogSeat is what the pre-check needs to know about a seat. Its price is
// Seat.PriceMinor and Seat.Currency (0 and "" for a seat without a price, which is not on sale).
type CatalogSeat struct {
	Seat reservation.Seat
	// OnSaleFrom and OnSaleUntil bound when the seat may be sold; zero means unbounded.
	OnSaleFrom, OnSaleUntil time.Time
	// AdmittedBy and AdmittedUntil are the gate's lease on the seat, if any.
	AdmittedBy    string
	AdmittedUntil time.Time
}

// PaymentReader retrieves a payment so the owner's GET can hand the browser what it needs to
// finish authentication (the client secret). Optional: without it GET omits clientSecret.
type PaymentReader interface {
	Retrieve(ctx context.Context, paymentIntentID string) (payment.Authorization, error)
}
