package saga

import (
	"context"
	"time"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Store is what the steps need from the reservation inventory. Every write is conditional on
// the guard (owner and version: a fencing token) and the expected prior state, and writes its
// outbox record in the same transaction. Errors are internal/reservation's typed errors
// (SeatUnavailable, HoldExpired, StaleVersion, UnexpectedState, GuardFailed, NotFound, …) or
// a wrapped store error.
type Store interface {
	// Claim holds the seats for a new reservation; a replay with the same idempotency key
	// returns the reservation it created.
	Claim(ctx context.Context, req reservation.ClaimRequest) (reservation.Reservation, error)
	Get(ctx context.Context, reservationID string) (reservation.Reservation, error)
	// StartPayment moves a live hold HELD -> PAYMENT_PENDING: from then on nobody else can
	// claim the seats, even past the deadline, until the payment's fate is known.
	StartPayment(ctx context.Context, reservationID string, g reservation.Guard) (reservation.Reservation, error)
	// Confirm moves PAYMENT_PENDING -> CONFIRMED; the hold must still be live.
	Confirm(ctx context.Context, reservationID string, g reservation.Guard) (reservation.Reservation, error)
	// Release gives the seats back (Release, or Expire for a lapsed hold); refused while money
	// may be held. Seats that are no longer this reservation's are left alone.
	Release(ctx context.Context, req ReleaseRequest) (reservation.Reservation, error)
	// Reacquire takes the seats back for a payment that succeeded after the hold lapsed, if
	// they are still ours or free; otherwise a *reservation.SeatUnavailable.
	Reacquire(ctx context.Context, reservationID string, g reservation.Guard) (reservation.Reservation, error)
	// UpdatePayment performs a payment event (or, with Event empty, only records the fields).
	UpdatePayment(ctx context.Context, u PaymentUpdate) (reservation.Reservation, error)
}

// ReleaseRequest gives a reservation's seats back.
type ReleaseRequest struct {
	ReservationID string
	Guard         reservation.Guard
	// Expired says the hold lapsed (event Expire) rather than being given up (Release).
	Expired bool
	// Reason is recorded in the outbox event ("declined", "customer_canceled", …).
	Reason string
	// NotifyCustomer marks the outbox event as one the customer must hear about.
	NotifyCustomer bool
}

// PaymentUpdate changes a reservation's payment half.
type PaymentUpdate struct {
	ReservationID string
	Guard         reservation.Guard
	// Event and From: the transition, required prior state included. Event "" records the
	// fields below without changing the payment state (e.g. a new task token on a retry).
	Event reservation.PaymentEvent
	From  reservation.PaymentState
	// Optional fields to record; empty values leave the stored ones alone.
	PaymentIntentID string
	TaskToken       string
	CaptureBefore   time.Time
	// CancelAttempts, when above the stored count, records a refused void (see
	// reservation.Reservation.CancelAttempts).
	CancelAttempts int
	// CustomerCanceled, when true, records the customer's cancel (see
	// reservation.Reservation.CustomerCanceled).
	CustomerCanceled bool
	// Reason is recorded in the outbox event; NotifyCustomer marks it for the customer.
	Reason         string
	NotifyCustomer bool
}

// Payments is what the steps need from the payment provider: internal/payment's port.
type Payments interface {
	CreateOrReuseAuthorization(ctx context.Context, req payment.AuthorizationRequest) (payment.Authorization, error)
	Confirm(ctx context.Context, req payment.ConfirmRequest) (payment.Authorization, error)
	Retrieve(ctx context.Context, paymentIntentID string) (payment.Authorization, error)
	Capture(ctx context.Context, req payment.CaptureRequest) (payment.Authorization, error)
	Cancel(ctx context.Context, req payment.CancelRequest) (payment.Authorization, error)
	Refund(ctx context.Context, req payment.RefundRequest) (payment.Refund, error)
}

var _ Payments = payment.Provider(nil)
