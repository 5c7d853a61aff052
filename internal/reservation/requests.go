package reservation

import "time"

// PaymentUpdate asks a store to change a reservation's payment half, fenced by Guard. The
// store applies the domain's rules (ApplyPayment, then ApplyInventory for ReleaseSeats) and
// writes everything, outbox record included, in one transaction.
type PaymentUpdate struct {
	ReservationID string
	Guard         Guard
	// Event and From: the transition, required prior state included. Event "" records the
	// detail fields below without changing the state or the version (e.g. a new task token).
	Event PaymentEvent
	From  PaymentState
	// Details to record; empty values leave the stored ones alone, and the counters only
	// grow, so a stale or replayed update cannot hand an old attempt back.
	PaymentIntentID string
	TaskToken       string
	CaptureBefore   time.Time
	CancelAttempts  int
	RefundID        string
	RefundAttempts  int
	// ReleaseSeats gives the seats back in the same write, as an expiry when Expired. The
	// release guard applies to the payment state after Event, so seats and money can never
	// be left disagreeing by a second write that fails.
	ReleaseSeats bool
	Expired      bool
	// Reason is recorded in the outbox event; NotifyCustomer marks it as one the customer
	// must hear about.
	Reason         string
	NotifyCustomer bool
}

// ReleaseRequest asks a store to give a reservation's seats back (Release, or Expire when the
// hold lapsed: seats taken by others since are then left alone).
type ReleaseRequest struct {
	ReservationID  string
	Guard          Guard
	Expired        bool
	Reason         string
	NotifyCustomer bool
}

// ApplyUpdate performs u on r: the payment event (if any), the details, and the release of the
// seats when asked, as one change with one version bump (a detail-only update keeps the
// version). Stores call it so that every store applies the same rules.
func (r Reservation) ApplyUpdate(u PaymentUpdate, now time.Time) (Reservation, error) {
	next := r
	if u.Event == "" {
		if err := r.fenced(u.Guard); err != nil {
			return r, err
		}
		// A detail-only change keeps the version: it invalidates no guard others hold.
		next = r.bumped(now)
		next.Version = r.Version
	} else {
		var err error
		if next, err = r.ApplyPayment(u.Event, u.From, u.Guard, now); err != nil {
			return r, err
		}
	}
	if u.ReleaseSeats && next.Inventory != Released {
		ev := Release
		if u.Expired {
			ev = Expire
		}
		released, err := next.ApplyInventory(ev, next.Inventory, GuardOf(next), now)
		if err != nil {
			return r, err
		}
		if u.Event != "" {
			// One change, one version: the release rides on the payment write.
			released.Version = next.Version
		}
		next = released
	}
	u.applyDetails(&next)
	return next, nil
}

func (u PaymentUpdate) applyDetails(r *Reservation) {
	if u.PaymentIntentID != "" {
		r.PaymentIntentID = u.PaymentIntentID
	}
	if u.TaskToken != "" {
		r.TaskToken = u.TaskToken
	}
	if !u.CaptureBefore.IsZero() {
		r.CaptureBefore = u.CaptureBefore.UTC()
	}
	if u.CancelAttempts > r.CancelAttempts {
		r.CancelAttempts = u.CancelAttempts
	}
	if u.RefundID != "" && u.Event != RefundFailed {
		r.RefundID = u.RefundID
	}
	if u.RefundAttempts > r.RefundAttempts {
		r.RefundAttempts = u.RefundAttempts
	}
}
