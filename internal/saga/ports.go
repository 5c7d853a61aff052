package saga

import (
	"context"

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
	// UpdatePayment performs a payment event (or, with Event empty, only records the fields),
	// releasing the seats in the same write when asked.
	UpdatePayment(ctx context.Context, u PaymentUpdate) (reservation.Reservation, error)
	// Cancel records the customer's cancel (reservation.Reservation.Cancel): refused once the
	// seats are CONFIRMED, a no-op when already recorded. From then on Confirm, Reacquire and
	// a capture request are refused in the write condition itself.
	Cancel(ctx context.Context, reservationID string, g reservation.Guard) (reservation.Reservation, error)
}

// ReleaseRequest and PaymentUpdate are the domain's store requests.
type (
	ReleaseRequest = reservation.ReleaseRequest
	PaymentUpdate  = reservation.PaymentUpdate
)

// Payments is what the steps need from the payment provider: internal/payment's port.
type Payments interface {
	CreateOrReuseAuthorization(ctx context.Context, req payment.AuthorizationRequest) (payment.Authorization, error)
	ConfirmPaymentMethod(ctx context.Context, req payment.ConfirmPaymentMethodRequest) (payment.Authorization, error)
	Retrieve(ctx context.Context, paymentIntentID string) (payment.Authorization, error)
	Capture(ctx context.Context, req payment.CaptureRequest) (payment.Authorization, error)
	Cancel(ctx context.Context, req payment.CancelRequest) (payment.Authorization, error)
	Refund(ctx context.Context, req payment.RefundRequest) (payment.Refund, error)
	RetrieveRefund(ctx context.Context, refundID string) (payment.Refund, error)
}

var _ Payments = payment.Provider(nil)
