package reservation

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// wantInventory is the inventory table written out independently of the code: every pair not
// listed must be refused with *IllegalTransition.
var wantInventory = map[InventoryState]map[InventoryEvent]InventoryState{
	Available:      {Claim: Held},
	Held:           {StartPayment: PaymentPending, Release: Released, Expire: Released, Reacquire: Confirmed},
	PaymentPending: {Confirm: Confirmed, Release: Released, Expire: Released, Reacquire: Confirmed},
	Confirmed:      {Release: Released},
	Released:       {Reacquire: Confirmed},
}

var wantPayment = map[PaymentState]map[PaymentEvent]PaymentState{
	NotStarted:     {StartAuthorization: Authorizing},
	Authorizing:    {AuthorizationOK: Authorized, PaymentDeclined: Failed, VoidPayment: Canceled, OutcomeUnknown: UnknownNeedsReconciliation},
	Authorized:     {RequestCapture: CapturePending, VoidPayment: Canceled, PaymentDeclined: Failed, OutcomeUnknown: UnknownNeedsReconciliation},
	CapturePending: {CaptureOK: Paid, PaymentDeclined: Failed, OutcomeUnknown: UnknownNeedsReconciliation},
	Paid:           {RefundPayment: Refunded, RequestRefund: RefundPending, RefundFailed: Paid, OutcomeUnknown: UnknownNeedsReconciliation},
	RefundPending:  {RefundPayment: Refunded, RefundFailed: Paid, OutcomeUnknown: UnknownNeedsReconciliation},
	Failed:         {VoidPayment: Canceled, RefundPayment: Refunded, OutcomeUnknown: UnknownNeedsReconciliation},
	Canceled:       {},
	Refunded:       {},
	UnknownNeedsReconciliation: {AuthorizationOK: Authorized, PaymentDeclined: Failed, CaptureOK: Paid,
		VoidPayment: Canceled, RefundPayment: Refunded, RequestRefund: RefundPending, RefundFailed: Paid},
}

func base(inv InventoryState, pay PaymentState) Reservation {
	return Reservation{ID: "r1", CustomerID: "c1", EventID: "e1", SeatIDs: []string{"A1"}, Amount: 1000,
		Currency: "EUR", HoldExpiresAt: t0.Add(10 * time.Minute), Inventory: inv, Payment: pay, Version: 4}
}

// setupFor picks the payment state and instant under which an inventory event's guards hold, so
// that the table alone decides.
func setupFor(ev InventoryEvent) (PaymentState, time.Time) {
	switch ev {
	case Confirm, Reacquire:
		return Authorized, t0
	case Expire:
		return NotStarted, t0.Add(time.Hour)
	}
	return NotStarted, t0
}

func TestEveryInventoryPair(t *testing.T) {
	for _, from := range InventoryStates() {
		for _, ev := range InventoryEvents() {
			t.Run(string(from)+"/"+string(ev), func(t *testing.T) {
				pay, now := setupFor(ev)
				r := base(from, pay)
				got, err := r.ApplyInventory(ev, from, GuardOf(r), now)
				want, allowed := wantInventory[from][ev]
				if !allowed {
					var it *IllegalTransition
					if !errors.As(err, &it) {
						t.Fatalf("want *IllegalTransition, got %v", err)
					}
					if got.Version != r.Version || got.Inventory != from {
						t.Fatalf("refused transition changed the reservation: %+v", got)
					}
					return
				}
				if err != nil {
					t.Fatalf("allowed transition refused: %v", err)
				}
				if got.Inventory != want || got.Version != r.Version+1 || got.Payment != pay {
					t.Fatalf("got %s v%d pay %s, want %s v%d pay %s", got.Inventory, got.Version, got.Payment, want, r.Version+1, pay)
				}
				if !got.UpdatedAt.Equal(now) {
					t.Fatalf("UpdatedAt %v, want %v", got.UpdatedAt, now)
				}
			})
		}
	}
}

func TestEveryPaymentPair(t *testing.T) {
	for _, from := range PaymentStates() {
		for _, ev := range PaymentEvents() {
			t.Run(string(from)+"/"+string(ev), func(t *testing.T) {
				inv := Held
				switch ev {
				case StartAuthorization:
					inv = PaymentPending
				case RequestCapture:
					inv = Confirmed
				}
				r := base(inv, from)
				got, err := r.ApplyPayment(ev, from, GuardOf(r), t0)
				want, allowed := wantPayment[from][ev]
				if !allowed {
					var it *IllegalTransition
					if !errors.As(err, &it) {
						t.Fatalf("want *IllegalTransition, got %v", err)
					}
					if got.Version != r.Version || got.Payment != from {
						t.Fatalf("refused transition changed the reservation: %+v", got)
					}
					return
				}
				if err != nil {
					t.Fatalf("allowed transition refused: %v", err)
				}
				if got.Payment != want || got.Version != r.Version+1 || got.Inventory != inv {
					t.Fatalf("got %s v%d, want %s v%d", got.Payment, got.Version, want, r.Version+1)
				}
				if (want == UnknownNeedsReconciliation) != !got.ReconcileSince.IsZero() {
					t.Fatalf("ReconcileSince %v with payment %s", got.ReconcileSince, want)
				}
			})
		}
	}
}

// The written-out tables and the code's tables must have the same rows (no extra rows hide in
// the code that the pair tests would miss because the setup never reaches them).
func TestTablesHaveNoExtraRows(t *testing.T) {
	for _, tr := range InventoryTransitions() {
		if to, ok := wantInventory[tr.From][tr.Event]; !ok || to != tr.To {
			t.Errorf("unexpected inventory row %+v", tr)
		}
	}
	for _, tr := range PaymentTransitions() {
		if to, ok := wantPayment[tr.From][tr.Event]; !ok || to != tr.To {
			t.Errorf("unexpected payment row %+v", tr)
		}
	}
}

func TestGuards(t *testing.T) {
	live, late := t0, t0.Add(10*time.Minute) // late is exactly the deadline: expired
	cases := []struct {
		name    string
		inv     InventoryState
		pay     PaymentState
		apply   func(Reservation) (Reservation, error)
		wantErr any
	}{
		{"wrong owner", Held, NotStarted, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(StartPayment, Held, Guard{Owner: "r2", Version: r.Version}, live)
		}, new(*NotOwner)},
		{"stale version", Held, NotStarted, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(StartPayment, Held, Guard{Owner: r.ID, Version: r.Version - 1}, live)
		}, new(*StaleVersion)},
		{"future version", Held, NotStarted, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(StartPayment, Held, Guard{Owner: r.ID, Version: r.Version + 1}, live)
		}, new(*StaleVersion)},
		{"unexpected inventory state", PaymentPending, NotStarted, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(StartPayment, Held, GuardOf(r), live)
		}, new(*UnexpectedState)},
		{"unexpected payment state", Held, Authorized, func(r Reservation) (Reservation, error) {
			return r.ApplyPayment(AuthorizationOK, Authorizing, GuardOf(r), live)
		}, new(*UnexpectedState)},
		{"start payment at the deadline", Held, NotStarted, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(StartPayment, Held, GuardOf(r), late)
		}, new(*HoldExpired)},
		{"confirm after the deadline", PaymentPending, Authorized, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Confirm, PaymentPending, GuardOf(r), late)
		}, new(*HoldExpired)},
		{"confirm before authorization", PaymentPending, Authorizing, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Confirm, PaymentPending, GuardOf(r), live)
		}, new(*GuardFailed)},
		{"expire a live hold", Held, NotStarted, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Expire, Held, GuardOf(r), live)
		}, new(*HoldStillLive)},
		{"expire while payment unknown", PaymentPending, UnknownNeedsReconciliation, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Expire, PaymentPending, GuardOf(r), late)
		}, new(*GuardFailed)},
		{"release while authorized", PaymentPending, Authorized, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Release, PaymentPending, GuardOf(r), live)
		}, new(*GuardFailed)},
		{"release a paid seat", Confirmed, Paid, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Release, Confirmed, GuardOf(r), live)
		}, new(*GuardFailed)},
		{"reacquire without money", Released, Failed, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Reacquire, Released, GuardOf(r), late)
		}, new(*GuardFailed)},
		{"start payment twice", Held, Canceled, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(StartPayment, Held, GuardOf(r), live)
		}, new(*GuardFailed)},
		{"authorize a merely held seat", Held, NotStarted, func(r Reservation) (Reservation, error) {
			return r.ApplyPayment(StartAuthorization, NotStarted, GuardOf(r), live)
		}, new(*GuardFailed)},
		{"capture before confirm", PaymentPending, Authorized, func(r Reservation) (Reservation, error) {
			return r.ApplyPayment(RequestCapture, Authorized, GuardOf(r), live)
		}, new(*GuardFailed)},
		{"confirm just before the deadline", PaymentPending, Authorized, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Confirm, PaymentPending, GuardOf(r), late.Add(-time.Nanosecond))
		}, nil},
		{"late success reacquires an expired pending hold", PaymentPending, Authorized, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Reacquire, PaymentPending, GuardOf(r), late)
		}, nil},
		{"expire a pending hold whose authorization is in flight", PaymentPending, Authorizing, func(r Reservation) (Reservation, error) {
			return r.ApplyInventory(Expire, PaymentPending, GuardOf(r), late)
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base(c.inv, c.pay)
			got, err := c.apply(r)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if got.Version != r.Version+1 {
					t.Fatalf("version %d", got.Version)
				}
				return
			}
			if err == nil || !errors.As(err, c.wantErr) {
				t.Fatalf("want %T, got %v", c.wantErr, err)
			}
			if got.Version != r.Version || got.Inventory != r.Inventory || got.Payment != r.Payment {
				t.Fatalf("refused transition changed the reservation")
			}
		})
	}
}

func TestOutcomes(t *testing.T) {
	cases := []struct {
		name string
		inv  InventoryState
		pay  PaymentState
		ev   InventoryEvent
		now  time.Time
		want Outcome
	}{
		{"confirm", PaymentPending, Authorized, Confirm, t0, OutcomeConfirmed},
		{"late reacquire", Released, Authorized, Reacquire, t0.Add(time.Hour), OutcomeConfirmedLate},
		{"release", Held, NotStarted, Release, t0, OutcomeReleased},
		{"expire", Held, NotStarted, Expire, t0.Add(time.Hour), OutcomeExpired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base(c.inv, c.pay)
			got, err := r.ApplyInventory(c.ev, c.inv, GuardOf(r), c.now)
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != c.want {
				t.Fatalf("outcome %q, want %q", got.Outcome, c.want)
			}
		})
	}
}

func TestApplyDoesNotAlias(t *testing.T) {
	r := base(Held, NotStarted)
	got, err := r.ApplyInventory(Release, Held, GuardOf(r), t0)
	if err != nil {
		t.Fatal(err)
	}
	got.SeatIDs[0] = "Z9"
	if r.SeatIDs[0] != "A1" {
		t.Fatal("transition result shares its seat slice with the original")
	}
}

func TestSeatClaimable(t *testing.T) {
	deadline := t0.Add(time.Minute)
	cases := []struct {
		name  string
		state InventoryState
		now   time.Time
		want  bool
	}{
		{"available", Available, t0, true},
		{"live hold", Held, t0, false},
		{"hold at its deadline", Held, deadline, true},
		{"expired hold", Held, deadline.Add(time.Second), true},
		{"payment pending past deadline", PaymentPending, deadline.Add(time.Hour), false},
		{"confirmed", Confirmed, deadline.Add(time.Hour), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Seat{EventID: "e", SeatID: "A1", State: c.state, ReservationID: "r", HoldExpiresAt: deadline}
			if got := s.ClaimableAt(c.now); got != c.want {
				t.Fatalf("ClaimableAt = %v, want %v", got, c.want)
			}
		})
	}
}

func TestParseLateSuccessPolicy(t *testing.T) {
	cases := []struct {
		in      string
		want    LateSuccessPolicy
		wantErr bool
	}{
		{"", LateSuccessReacquire, false},
		{"reacquire", LateSuccessReacquire, false},
		{" VOID ", LateSuccessVoid, false},
		{"refund", "", true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseLateSuccessPolicy(c.in)
			if (err != nil) != c.wantErr || got != c.want {
				t.Fatalf("got %q, %v", got, err)
			}
			var p LateSuccessPolicy
			if err := p.UnmarshalText([]byte(c.in)); (err != nil) != c.wantErr || p != c.want {
				t.Fatalf("UnmarshalText: %q, %v", p, err)
			}
		})
	}
}

func TestParseStates(t *testing.T) {
	for _, s := range InventoryStates() {
		if got, err := ParseInventoryState(string(s)); err != nil || got != s {
			t.Errorf("ParseInventoryState(%s) = %s, %v", s, got, err)
		}
	}
	for _, s := range PaymentStates() {
		if got, err := ParsePaymentState(string(s)); err != nil || got != s {
			t.Errorf("ParsePaymentState(%s) = %s, %v", s, got, err)
		}
	}
	if _, err := ParseInventoryState("SOLD"); err == nil {
		t.Error("unknown inventory state accepted")
	}
	if _, err := ParsePaymentState("held"); err == nil {
		t.Error("unknown payment state accepted")
	}
}
