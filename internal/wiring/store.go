package wiring

import (
	"context"
	"strings"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// StoreAdapter fits the DynamoDB inventory to the saga's Store port.
type StoreAdapter struct {
	Store *inventory.Store
}

var _ saga.Store = StoreAdapter{}

// Claim implements saga.Store.
func (a StoreAdapter) Claim(ctx context.Context, req reservation.ClaimRequest) (reservation.Reservation, error) {
	res, err := a.Store.Claim(ctx, req)
	return res.Reservation, err
}

// Get implements saga.Store.
func (a StoreAdapter) Get(ctx context.Context, id string) (reservation.Reservation, error) {
	return a.Store.Get(ctx, id)
}

// StartPayment implements saga.Store.
func (a StoreAdapter) StartPayment(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return a.Store.MarkPaymentPending(ctx, id, g, inventory.PaymentDetails{})
}

// Confirm implements saga.Store.
func (a StoreAdapter) Confirm(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	return a.Store.Confirm(ctx, id, g)
}

// Release implements saga.Store: Expire for a lapsed hold (seats taken since are left alone),
// Release otherwise.
func (a StoreAdapter) Release(ctx context.Context, req saga.ReleaseRequest) (reservation.Reservation, error) {
	cur, err := a.Store.Get(ctx, req.ReservationID)
	if err != nil {
		return reservation.Reservation{}, err
	}
	if req.Expired {
		return a.Store.Expire(ctx, req.ReservationID, cur.Inventory, req.Guard)
	}
	return a.Store.Release(ctx, req.ReservationID, cur.Inventory, req.Guard, reason(req.Reason, req.NotifyCustomer))
}

// Reacquire implements saga.Store.
func (a StoreAdapter) Reacquire(ctx context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	cur, err := a.Store.Get(ctx, id)
	if err != nil {
		return reservation.Reservation{}, err
	}
	return a.Store.Reacquire(ctx, id, cur.Inventory, g)
}

// UpdatePayment implements saga.Store.
func (a StoreAdapter) UpdatePayment(ctx context.Context, u saga.PaymentUpdate) (reservation.Reservation, error) {
	d := inventory.PaymentDetails{PaymentIntentID: u.PaymentIntentID, TaskToken: u.TaskToken, CaptureBefore: u.CaptureBefore,
		CancelAttempts: u.CancelAttempts, CustomerCanceled: u.CustomerCanceled}
	if u.Event == "" {
		return a.Store.UpdateDetails(ctx, u.ReservationID, u.Guard, d)
	}
	return a.Store.SetPaymentState(ctx, u.ReservationID, u.Event, u.From, u.Guard, d)
}

// reason is the outbox reason; a customer notification is marked in it, which the consumers
// that email customers select on.
func reason(r string, notify bool) string {
	if notify && !strings.Contains(r, "notify_customer") {
		return r + "; notify_customer"
	}
	return r
}
