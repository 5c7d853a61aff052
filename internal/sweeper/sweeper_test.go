package sweeper

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
)

const machine = "arn:aws:states:us-east-1:000000000000:stateMachine:reservation"

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fakeReconciler answers Resolve with a fixed outcome per reservation and applies its effect
// to the store, as the saga's reconcile step would.
type fakeReconciler struct {
	mu       sync.Mutex
	inv      *sagatest.IndexedStore
	now      func() time.Time
	outcomes map[string]string
	err      error
	calls    []saga.Input
}

func (f *fakeReconciler) Resolve(_ context.Context, in saga.Input) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, in)
	if f.err != nil {
		return "", f.err
	}
	outcome := f.outcomes[in.ReservationID]
	r, _ := f.inv.Reservation(in.ReservationID)
	switch outcome {
	case saga.OutcomeRetry, saga.OutcomeUnresolved:
		r.Payment = reservation.UnknownNeedsReconciliation
		if r.ReconcileSince.IsZero() {
			r.ReconcileSince = f.now()
		}
	case saga.OutcomePaid:
		r.Inventory, r.Payment, r.ReconcileSince = reservation.Confirmed, reservation.Paid, time.Time{}
	default:
		r.Inventory, r.Payment, r.ReconcileSince = reservation.Released, reservation.Canceled, time.Time{}
	}
	f.inv.Put(r)
	return outcome, nil
}

func execARN(id string) string {
	return "arn:aws:states:us-east-1:000000000000:execution:reservation:" + id
}

type rig struct {
	clock   *clock.Fake
	inv     *sagatest.IndexedStore
	rec     *fakeReconciler
	sfn     *sagatest.StepFunctions
	running *fakeRunning
	metrics *metrics.Memory
	s       *Sweeper
}

// rigOption adjusts the rig's Deps before the sweeper is built.
type rigOption func(*Deps)

func newRig(t *testing.T, opts ...rigOption) *rig {
	t.Helper()
	r := &rig{clock: clock.NewFake(t0), sfn: sagatest.NewStepFunctions(), running: newFakeRunning(), metrics: metrics.NewMemory()}
	r.inv = sagatest.NewIndexedStore(r.clock.Now)
	r.rec = &fakeReconciler{inv: r.inv, now: r.clock.Now, outcomes: map[string]string{}}
	d := Deps{Backlog: r.inv, Expirer: r.inv, Reconciler: r.rec, SFN: r.sfn, Running: r.running, StateMachineARN: machine,
		Grace: 2 * time.Minute, Now: r.clock.Now, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: r.metrics}
	for _, o := range opts {
		o(&d)
	}
	s, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	return r
}

// gauge is the last value the run published for a gauge; a gauge that was not published
// fails the test.
func (r *rig) gauge(t *testing.T, name string) metrics.Reading {
	t.Helper()
	g, ok := r.metrics.Last(name)
	if !ok {
		t.Fatalf("%s was not published", name)
	}
	return g
}

// execution records the reservation's execution with a status.
func (r *rig) execution(id string, status sfntypes.ExecutionStatus) {
	r.sfn.PutExecution(execARN(id), "{}", status)
}

// expired counts the holds the sweeper expired.
func (r *rig) expired() int {
	n := 0
	for _, c := range r.inv.Changes() {
		if c.Op == sagatest.OpExpire {
			n++
		}
	}
	return n
}

// hold adds a reservation whose hold ended ago before t0.
func (r *rig) hold(id string, ago time.Duration, mut func(*reservation.Reservation)) {
	res := reservation.Reservation{ID: id, CustomerID: "c", EventID: "ev1", SeatIDs: []string{"A1"}, Amount: 100, Currency: "EUR",
		Inventory: reservation.Held, Payment: reservation.NotStarted, Version: 1, HoldExpiresAt: t0.Add(-ago)}
	if mut != nil {
		mut(&res)
	}
	r.inv.Put(res)
}

func paying(pi string) func(*reservation.Reservation) {
	return func(r *reservation.Reservation) {
		r.Inventory, r.Payment, r.PaymentIntentID, r.TaskToken, r.Version = reservation.PaymentPending, reservation.Authorizing, pi, "tok", 3
	}
}

// awaitingCapture makes a reservation whose seats were confirmed with payment p (AUTHORIZED or
// CAPTURE_PENDING) and that joined the reconciliation index ago before t0.
func awaitingCapture(p reservation.PaymentState, ago time.Duration) func(*reservation.Reservation) {
	return func(r *reservation.Reservation) {
		r.Inventory, r.Payment, r.PaymentIntentID, r.Version = reservation.Confirmed, p, "pi_1", 6
		r.ReconcileSince, r.CaptureBefore = t0.Add(-ago), t0.Add(-ago).Add(7*24*time.Hour)
	}
}

func TestSweep(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*rig)
		want  Result
		// wantInventory/wantPayment of reservation "r1" after the run.
		wantInventory reservation.InventoryState
		wantPayment   reservation.PaymentState
	}{
		{name: "orphaned hold without payment: released", setup: func(r *rig) { r.hold("r1", 5*time.Minute, nil) },
			want:          Result{HoldsExamined: 1, Released: 1},
			wantInventory: reservation.Released, wantPayment: reservation.NotStarted},
		{name: "execution ended: released", setup: func(r *rig) {
			r.hold("r1", 5*time.Minute, nil)
			r.execution("r1", sfntypes.ExecutionStatusAborted)
		}, want: Result{HoldsExamined: 1, Released: 1}, wantInventory: reservation.Released, wantPayment: reservation.NotStarted},
		{name: "stored execution ARN is used", setup: func(r *rig) {
			r.hold("r1", 5*time.Minute, func(res *reservation.Reservation) { res.ExecutionARN = "arn:custom" })
			r.execution("r1", sfntypes.ExecutionStatusRunning) // would be left alone if used
		}, want: Result{HoldsExamined: 1, Released: 1}, wantInventory: reservation.Released, wantPayment: reservation.NotStarted},
		{name: "within the grace period: not listed", setup: func(r *rig) { r.hold("r1", time.Minute, nil) },
			want: Result{}, wantInventory: reservation.Held, wantPayment: reservation.NotStarted},
		{name: "saga still running: left to it, unreleased but not the sweeper's backlog", setup: func(r *rig) {
			r.hold("r1", 5*time.Minute, nil)
			r.execution("r1", sfntypes.ExecutionStatusRunning)
		}, want: Result{HoldsExamined: 1, LeftToSaga: 1, ExpiredHoldsUnreleased: 1, ExpiredHoldOldestAgeSeconds: 300, ReconciliationBacklog: 0},
			wantInventory: reservation.Held, wantPayment: reservation.NotStarted},
		{name: "saga running but stuck: released", setup: func(r *rig) {
			r.hold("r1", 2*time.Hour, nil)
			r.execution("r1", sfntypes.ExecutionStatusRunning)
		}, want: Result{HoldsExamined: 1, Released: 1}, wantInventory: reservation.Released, wantPayment: reservation.NotStarted},
		{name: "orphan with a PaymentIntent: reconciled, never released on a guess", setup: func(r *rig) {
			r.hold("r1", 5*time.Minute, paying("pi_1"))
			r.rec.outcomes["r1"] = saga.OutcomeExpired
		}, want: Result{HoldsExamined: 1, Reconciled: 1}, wantInventory: reservation.Released, wantPayment: reservation.Canceled},
		{name: "provider down: payment stays unknown, seats protected", setup: func(r *rig) {
			r.hold("r1", 5*time.Minute, paying("pi_1"))
			r.rec.outcomes["r1"] = saga.OutcomeRetry
			// It entered the backlog when its hold lapsed, five minutes ago.
		}, want: Result{HoldsExamined: 1, UnresolvedPayments: 1, UnresolvedPaymentOldestAgeSeconds: 300, ReconciliationBacklog: 1},
			wantInventory: reservation.PaymentPending, wantPayment: reservation.UnknownNeedsReconciliation},
		{name: "unknown payment, provider back: resolved", setup: func(r *rig) {
			r.hold("r1", 20*time.Minute, func(res *reservation.Reservation) {
				paying("pi_1")(res)
				res.Payment, res.ReconcileSince = reservation.UnknownNeedsReconciliation, t0.Add(-10*time.Minute)
			})
			r.rec.outcomes["r1"] = saga.OutcomePaid
		}, want: Result{HoldsExamined: 1, PaymentsExamined: 1, Reconciled: 1},
			wantInventory: reservation.Confirmed, wantPayment: reservation.Paid},
		{name: "unknown payment still unknown: oldest age from when it became unknown", setup: func(r *rig) {
			r.hold("r1", 20*time.Minute, func(res *reservation.Reservation) {
				paying("pi_1")(res)
				res.Payment, res.ReconcileSince = reservation.UnknownNeedsReconciliation, t0.Add(-10*time.Minute)
			})
			r.rec.outcomes["r1"] = saga.OutcomeUnresolved
		}, want: Result{HoldsExamined: 1, PaymentsExamined: 1, UnresolvedPayments: 1, UnresolvedPaymentOldestAgeSeconds: 600, ReconciliationBacklog: 1},
			wantInventory: reservation.PaymentPending, wantPayment: reservation.UnknownNeedsReconciliation},
		{name: "confirmed seats whose capture is unknown (not on the hold index)", setup: func(r *rig) {
			r.hold("r1", time.Hour, func(res *reservation.Reservation) {
				res.Inventory, res.Payment, res.PaymentIntentID = reservation.Confirmed, reservation.UnknownNeedsReconciliation, "pi_1"
				res.ReconcileSince, res.CaptureBefore = t0.Add(-time.Hour), t0.Add(time.Hour)
			})
			r.rec.outcomes["r1"] = saga.OutcomeRetry
		}, want: Result{PaymentsExamined: 1, UnresolvedPayments: 1, UnresolvedPaymentOldestAgeSeconds: 3600, ReconciliationBacklog: 1, AuthorizationsNearCaptureDeadline: 1},
			wantInventory: reservation.Confirmed, wantPayment: reservation.UnknownNeedsReconciliation},
		{name: "confirmed and authorized, execution gone: captured", setup: func(r *rig) {
			r.hold("r1", time.Hour, awaitingCapture(reservation.Authorized, 30*time.Minute))
			r.execution("r1", sfntypes.ExecutionStatusAborted)
			r.rec.outcomes["r1"] = saga.OutcomePaid
		}, want: Result{PaymentsExamined: 1, Reconciled: 1, Captured: 1},
			wantInventory: reservation.Confirmed, wantPayment: reservation.Paid},
		{name: "capture pending, execution failed: finished", setup: func(r *rig) {
			r.hold("r1", time.Hour, awaitingCapture(reservation.CapturePending, 30*time.Minute))
			r.execution("r1", sfntypes.ExecutionStatusFailed)
			r.rec.outcomes["r1"] = saga.OutcomePaid
		}, want: Result{PaymentsExamined: 1, Reconciled: 1, Captured: 1},
			wantInventory: reservation.Confirmed, wantPayment: reservation.Paid},
		{name: "confirmed and authorized within the grace period: not listed", setup: func(r *rig) {
			r.hold("r1", time.Hour, awaitingCapture(reservation.Authorized, time.Minute))
			r.rec.outcomes["r1"] = saga.OutcomePaid
		}, want: Result{}, wantInventory: reservation.Confirmed, wantPayment: reservation.Authorized},
		{name: "confirmed and authorized, saga running: left to it, unresolved but not the sweeper's backlog", setup: func(r *rig) {
			r.hold("r1", time.Hour, awaitingCapture(reservation.Authorized, 5*time.Minute))
			r.execution("r1", sfntypes.ExecutionStatusRunning)
			r.rec.outcomes["r1"] = saga.OutcomePaid
		}, want: Result{PaymentsExamined: 1, LeftToSaga: 1, UnresolvedPayments: 1, UnresolvedPaymentOldestAgeSeconds: 300, ReconciliationBacklog: 0},
			wantInventory: reservation.Confirmed, wantPayment: reservation.Authorized},
		{name: "confirmed and authorized, saga running but stuck: captured", setup: func(r *rig) {
			r.hold("r1", 3*time.Hour, awaitingCapture(reservation.Authorized, 2*time.Hour))
			r.execution("r1", sfntypes.ExecutionStatusRunning)
			r.rec.outcomes["r1"] = saga.OutcomePaid
		}, want: Result{PaymentsExamined: 1, Reconciled: 1, Captured: 1},
			wantInventory: reservation.Confirmed, wantPayment: reservation.Paid},
		{name: "authorization near its capture deadline, provider down: counted", setup: func(r *rig) {
			r.hold("r1", 7*24*time.Hour, awaitingCapture(reservation.Authorized, 7*24*time.Hour-2*time.Hour))
			r.rec.outcomes["r1"] = saga.OutcomeRetry
		}, want: Result{PaymentsExamined: 1, UnresolvedPayments: 1, UnresolvedPaymentOldestAgeSeconds: int64((7*24*time.Hour - 2*time.Hour) / time.Second),
			ReconciliationBacklog: 1, AuthorizationsNearCaptureDeadline: 1},
			wantInventory: reservation.Confirmed, wantPayment: reservation.UnknownNeedsReconciliation},
		{name: "late authorization for released seats: voided through reconcile, not counted as captured", setup: func(r *rig) {
			r.hold("r1", time.Hour, func(res *reservation.Reservation) {
				res.Inventory, res.Payment, res.PaymentIntentID = reservation.Released, reservation.Authorized, "pi_1"
				res.ReconcileSince = t0.Add(-30 * time.Minute)
			})
			r.rec.outcomes["r1"] = saga.OutcomeVoided
		}, want: Result{PaymentsExamined: 1, Reconciled: 1},
			wantInventory: reservation.Released, wantPayment: reservation.Canceled},
		{name: "capture raced by the saga: the lost race changes nothing and is counted", setup: func(r *rig) {
			r.hold("r1", time.Hour, awaitingCapture(reservation.Authorized, 30*time.Minute))
			r.rec.err = &reservation.StaleVersion{ReservationID: "r1", Expected: 6, Actual: 7}
		}, want: Result{PaymentsExamined: 1, LostRaces: 1, UnresolvedPayments: 1, UnresolvedPaymentOldestAgeSeconds: 1800, ReconciliationBacklog: 1},
			wantInventory: reservation.Confirmed, wantPayment: reservation.Authorized},
		{name: "racing a late confirm: the confirm wins, the sweeper changes nothing", setup: func(r *rig) {
			r.hold("r1", 5*time.Minute, nil)
			r.inv.BeforeExpire = func(id string) {
				res, _ := r.inv.Reservation(id)
				res.Inventory, res.Payment, res.Version = reservation.Confirmed, reservation.Paid, res.Version+1
				r.inv.Put(res)
			}
		}, want: Result{HoldsExamined: 1, LostRaces: 1}, wantInventory: reservation.Confirmed, wantPayment: reservation.Paid},
		{name: "step functions unreachable: counted, left for the next run", setup: func(r *rig) {
			r.hold("r1", 5*time.Minute, nil)
			r.sfn.FailAll(sagatest.SFNDescribeExecution, errors.New("connection refused"))
		}, want: Result{HoldsExamined: 1, Errors: 1, ExpiredHoldsUnreleased: 1, ExpiredHoldOldestAgeSeconds: 300, ReconciliationBacklog: 1},
			wantInventory: reservation.Held, wantPayment: reservation.NotStarted},
		{name: "reconcile fails: counted, left for the next run", setup: func(r *rig) {
			r.hold("r1", 5*time.Minute, paying("pi_1"))
			r.rec.err = &saga.TransientError{Detail: "store down"}
		}, want: Result{HoldsExamined: 1, Errors: 1, ExpiredHoldsUnreleased: 1, ExpiredHoldOldestAgeSeconds: 300, ReconciliationBacklog: 1},
			wantInventory: reservation.PaymentPending, wantPayment: reservation.Authorizing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			tc.setup(r)
			got, err := r.s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("result\n got %+v\nwant %+v", got, tc.want)
			}
			res, _ := r.inv.Reservation("r1")
			if res.Inventory != tc.wantInventory || res.Payment != tc.wantPayment {
				t.Fatalf("r1 is %s/%s, want %s/%s", res.Inventory, res.Payment, tc.wantInventory, tc.wantPayment)
			}
			if g := r.gauge(t, MetricReconciliationBacklog); g != (metrics.Reading{Value: float64(tc.want.ReconciliationBacklog), Unit: metrics.UnitCount}) {
				t.Fatalf("published backlog %+v", g)
			}
			if g := r.gauge(t, MetricExpiredHoldsUnreleased); g != (metrics.Reading{Value: float64(tc.want.ExpiredHoldsUnreleased), Unit: metrics.UnitCount}) {
				t.Fatalf("published expired holds %+v", g)
			}
			for _, in := range r.rec.calls {
				if in.ReservationID != "r1" || in.CustomerID != "c" || in.Currency != "eur" || len(in.SeatIDs) != 1 {
					t.Fatalf("reconcile input %+v", in)
				}
			}
		})
	}
}

func TestSweepListingFails(t *testing.T) {
	r := newRig(t)
	r.inv.Fail[sagatest.OpExpiredHolds] = errors.New("throttled")
	if _, err := r.s.Run(context.Background()); err == nil {
		t.Fatal("no error")
	}
}

// TestSweepIsIdempotent: a second run finds nothing left to do.
func TestSweepIsIdempotent(t *testing.T) {
	r := newRig(t)
	r.hold("r1", 5*time.Minute, nil)
	r.hold("r2", 10*time.Minute, paying("pi_2"))
	r.rec.outcomes["r2"] = saga.OutcomeExpired
	first, err := r.s.Run(context.Background())
	if err != nil || first.Released != 1 || first.Reconciled != 1 || first.ReconciliationBacklog != 0 {
		t.Fatalf("first run %+v %v", first, err)
	}
	second, err := r.s.Run(context.Background())
	if err != nil || second != (Result{}) {
		t.Fatalf("second run %+v %v", second, err)
	}
	if r.expired() != 1 || len(r.rec.calls) != 1 {
		t.Fatalf("expired %d, reconciled %d", r.expired(), len(r.rec.calls))
	}
}

// TestSweepMany settles a backlog larger than the concurrency, mixed kinds, and counts every one.
func TestSweepMany(t *testing.T) {
	r := newRig(t)
	for i := 0; i < 40; i++ {
		id := "h" + strconv.Itoa(i)
		if i%2 == 0 {
			r.hold(id, time.Duration(i+3)*time.Minute, nil)
			continue
		}
		r.hold(id, time.Duration(i+3)*time.Minute, paying("pi_"+id))
		r.rec.outcomes[id] = map[bool]string{true: saga.OutcomeRetry, false: saga.OutcomeExpired}[i%4 == 1]
	}
	res, err := r.s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Result{HoldsExamined: 40, Released: 20, Reconciled: 10, UnresolvedPayments: 10, ReconciliationBacklog: 10,
		UnresolvedPaymentOldestAgeSeconds: int64((37 + 3) * 60)}
	if res != want {
		t.Fatalf("result\n got %+v\nwant %+v", res, want)
	}
}
