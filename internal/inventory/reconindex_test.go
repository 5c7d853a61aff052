package inventory_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
)

// reconEntry reads the stored item's reconciliation index attributes: ok reports that both
// are present; one without the other fails the test.
func (f *fixture) reconEntry(t *testing.T, id string) (since time.Time, ok bool) {
	t.Helper()
	out, err := f.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.env.Names.Of(tables.ReservationsTable)), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{tables.AttrReservationID: &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	shard, hasShard := out.Item[tables.AttrReconShard].(*types.AttributeValueMemberS)
	sinceAV, hasSince := out.Item[tables.AttrReconSince].(*types.AttributeValueMemberS)
	if hasShard != hasSince {
		t.Fatalf("%s: reconShard present %v, reconSince present %v", id, hasShard, hasSince)
	}
	if !hasShard {
		return time.Time{}, false
	}
	if shard.Value == "" {
		t.Fatalf("%s: empty reconShard", id)
	}
	since, err = time.Parse(inventory.TimeLayout, sinceAV.Value)
	if err != nil {
		t.Fatal(err)
	}
	return since, true
}

// TestReconciliationIndexFollowsThePayment walks reservations through every transition that
// puts one on the reconcileByAge index, keeps it there or takes it off, and checks after each
// write that the index attributes are present exactly when seats and money disagree with no
// hold's deadline to find them by (reservation.Unsettled), with the age the sweeper reads.
func TestReconciliationIndexFollowsThePayment(t *testing.T) {
	type step struct {
		name string
		do   func(ctx context.Context, f *fixture, r reservation.Reservation) (reservation.Reservation, error)
		// advance moves the clock before the step.
		advance time.Duration
		want    bool
		// sinceStep is the index (into the case's steps) of the step whose time the entry
		// must carry; -1 means "this step".
		sinceStep int
	}
	pay := func(ev reservation.PaymentEvent, from reservation.PaymentState) func(context.Context, *fixture, reservation.Reservation) (reservation.Reservation, error) {
		return func(ctx context.Context, f *fixture, r reservation.Reservation) (reservation.Reservation, error) {
			return f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r),
				Event: ev, From: from, PaymentIntentID: "pi_" + r.ID})
		}
	}
	pending := func(ctx context.Context, f *fixture, r reservation.Reservation) (reservation.Reservation, error) {
		return f.store.StartPayment(ctx, r.ID, reservation.GuardOf(r))
	}
	confirm := func(ctx context.Context, f *fixture, r reservation.Reservation) (reservation.Reservation, error) {
		return f.store.Confirm(ctx, r.ID, reservation.GuardOf(r))
	}
	release := func(ctx context.Context, f *fixture, r reservation.Reservation) (reservation.Reservation, error) {
		return f.store.Release(ctx, reservation.ReleaseRequest{ReservationID: r.ID, Guard: reservation.GuardOf(r), Reason: "test"})
	}
	expire := func(ctx context.Context, f *fixture, r reservation.Reservation) (reservation.Reservation, error) {
		return f.store.Expire(ctx, r.ID, reservation.PaymentPending, reservation.GuardOf(r))
	}
	reacquire := func(ctx context.Context, f *fixture, r reservation.Reservation) (reservation.Reservation, error) {
		return f.store.Reacquire(ctx, r.ID, reservation.GuardOf(r))
	}
	details := func(ctx context.Context, f *fixture, r reservation.Reservation) (reservation.Reservation, error) {
		return f.store.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: r.ID, Guard: reservation.GuardOf(r), TaskToken: "tok-" + r.ID})
	}
	// Every case starts from a fresh HELD reservation with a 10-minute hold.
	untilAuthorized := []step{
		{name: "payment pending", do: pending},
		{name: "authorizing (hold live)", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
		{name: "authorized (hold live)", do: pay(reservation.AuthorizationOK, reservation.Authorizing)},
	}
	with := func(rest ...step) []step { return append(append([]step(nil), untilAuthorized...), rest...) }
	cases := []struct {
		name  string
		steps []step
	}{
		{name: "happy path: on from confirm to capture, age kept through capture requested", steps: with(
			step{name: "confirmed", do: confirm, advance: time.Minute, want: true, sinceStep: -1},
			step{name: "capture pending", do: pay(reservation.RequestCapture, reservation.Authorized), advance: time.Minute, want: true, sinceStep: 3},
			step{name: "paid", do: pay(reservation.CaptureOK, reservation.CapturePending), advance: time.Minute},
		)},
		{name: "capture uncertain: unknown restarts the age, captured takes it off", steps: with(
			step{name: "confirmed", do: confirm, want: true, sinceStep: -1},
			step{name: "capture pending", do: pay(reservation.RequestCapture, reservation.Authorized), want: true, sinceStep: 3},
			step{name: "unknown", do: pay(reservation.OutcomeUnknown, reservation.CapturePending), advance: time.Minute, want: true, sinceStep: -1},
			step{name: "execution details recorded", do: details, advance: time.Minute, want: true, sinceStep: 5},
			step{name: "paid", do: pay(reservation.CaptureOK, reservation.UnknownNeedsReconciliation)},
		)},
		{name: "capture refused: CONFIRMED+FAILED stays on with its age until the seats are released", steps: with(
			step{name: "confirmed", do: confirm, want: true, sinceStep: -1},
			step{name: "capture pending", do: pay(reservation.RequestCapture, reservation.Authorized), want: true, sinceStep: 3},
			step{name: "failed", do: pay(reservation.PaymentDeclined, reservation.CapturePending), advance: time.Minute, want: true, sinceStep: 3},
			step{name: "released", do: release},
		)},
		{name: "authorized and confirmed, then voided: CONFIRMED+CANCELED stays on until the seats are released", steps: with(
			step{name: "confirmed", do: confirm, want: true, sinceStep: -1},
			step{name: "execution details recorded", do: details, advance: time.Hour, want: true, sinceStep: 3},
			step{name: "voided", do: pay(reservation.VoidPayment, reservation.Authorized), advance: time.Minute, want: true, sinceStep: 3},
			step{name: "released", do: release},
		)},
		{name: "sold, then refunded: CONFIRMED+REFUND_PENDING and CONFIRMED+REFUNDED are on until the seats are released", steps: with(
			step{name: "confirmed", do: confirm, want: true, sinceStep: -1},
			step{name: "capture pending", do: pay(reservation.RequestCapture, reservation.Authorized), want: true, sinceStep: 3},
			step{name: "paid", do: pay(reservation.CaptureOK, reservation.CapturePending)},
			step{name: "refund pending", do: pay(reservation.RequestRefund, reservation.Paid), advance: time.Minute, want: true, sinceStep: -1},
			step{name: "refunded", do: pay(reservation.RefundPayment, reservation.RefundPending), advance: time.Minute, want: true, sinceStep: 6},
			step{name: "released", do: release},
		)},
		{name: "unknown while the hold keeps the seats: on; authorized under the hold: off", steps: []step{
			{name: "payment pending", do: pending},
			{name: "authorizing", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
			{name: "unknown", do: pay(reservation.OutcomeUnknown, reservation.Authorizing), advance: time.Minute, want: true, sinceStep: -1},
			{name: "authorized", do: pay(reservation.AuthorizationOK, reservation.UnknownNeedsReconciliation)},
			{name: "confirmed", do: confirm, want: true, sinceStep: -1},
		}},
		{name: "seats given back while authorizing: on until the late outcome is settled", steps: []step{
			{name: "payment pending", do: pending},
			{name: "authorizing", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
			{name: "hold expired", do: expire, advance: 11 * time.Minute, want: true, sinceStep: -1},
			{name: "late authorization", do: pay(reservation.AuthorizationOK, reservation.Authorizing), advance: time.Minute, want: true, sinceStep: 2},
			{name: "reacquired", do: reacquire, want: true, sinceStep: 2},
			{name: "capture pending", do: pay(reservation.RequestCapture, reservation.Authorized), want: true, sinceStep: 2},
			{name: "paid", do: pay(reservation.CaptureOK, reservation.CapturePending)},
		}},
		{name: "declined, void uncertain: FAILED -> UNKNOWN puts it on, the void found later takes it off", steps: []step{
			{name: "payment pending", do: pending},
			{name: "authorizing", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
			{name: "declined", do: pay(reservation.PaymentDeclined, reservation.Authorizing)},
			{name: "void uncertain", do: pay(reservation.OutcomeUnknown, reservation.Failed), advance: time.Minute, want: true, sinceStep: -1},
			{name: "voided", do: pay(reservation.VoidPayment, reservation.UnknownNeedsReconciliation)},
		}},
		{name: "declined, then the void or refund is found: FAILED -> CANCELED or REFUNDED stays off", steps: []step{
			{name: "payment pending", do: pending},
			{name: "authorizing", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
			{name: "declined", do: pay(reservation.PaymentDeclined, reservation.Authorizing)},
			{name: "voided", do: pay(reservation.VoidPayment, reservation.Failed)},
			{name: "released", do: release},
		}},
		{name: "declined, captured meanwhile and refunded: FAILED -> REFUNDED stays off", steps: []step{
			{name: "payment pending", do: pending},
			{name: "authorizing", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
			{name: "declined", do: pay(reservation.PaymentDeclined, reservation.Authorizing)},
			{name: "refunded", do: pay(reservation.RefundPayment, reservation.Failed)},
		}},
		{name: "seats given back while authorizing, then voided: off", steps: []step{
			{name: "payment pending", do: pending},
			{name: "authorizing", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
			{name: "hold expired", do: expire, advance: 11 * time.Minute, want: true, sinceStep: -1},
			{name: "voided", do: pay(reservation.VoidPayment, reservation.Authorizing)},
		}},
		{name: "declined under the hold: never on", steps: []step{
			{name: "payment pending", do: pending},
			{name: "authorizing", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
			{name: "declined", do: pay(reservation.PaymentDeclined, reservation.Authorizing)},
			{name: "released", do: release},
		}},
		{name: "captured for seats that are gone: on until refunded", steps: []step{
			{name: "payment pending", do: pending},
			{name: "authorizing", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
			{name: "hold expired", do: expire, advance: 11 * time.Minute, want: true, sinceStep: -1},
			{name: "unknown", do: pay(reservation.OutcomeUnknown, reservation.Authorizing), advance: time.Minute, want: true, sinceStep: -1},
			{name: "paid, seats released", do: pay(reservation.CaptureOK, reservation.UnknownNeedsReconciliation), advance: time.Minute, want: true, sinceStep: 3},
			{name: "refunded", do: pay(reservation.RefundPayment, reservation.Paid)},
		}},
		{name: "captured for seats that are gone, refund pending: RELEASED+REFUND_PENDING stays on until refunded", steps: []step{
			{name: "payment pending", do: pending},
			{name: "authorizing", do: pay(reservation.StartAuthorization, reservation.NotStarted)},
			{name: "hold expired", do: expire, advance: 11 * time.Minute, want: true, sinceStep: -1},
			{name: "late authorization", do: pay(reservation.AuthorizationOK, reservation.Authorizing), want: true, sinceStep: 2},
			{name: "unknown", do: pay(reservation.OutcomeUnknown, reservation.Authorized), advance: time.Minute, want: true, sinceStep: -1},
			{name: "paid", do: pay(reservation.CaptureOK, reservation.UnknownNeedsReconciliation), advance: time.Minute, want: true, sinceStep: 4},
			{name: "refund pending", do: pay(reservation.RequestRefund, reservation.Paid), advance: time.Minute, want: true, sinceStep: 4},
			{name: "refunded", do: pay(reservation.RefundPayment, reservation.RefundPending)},
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.seats(t, "show", "A1")
			id := "r" + string(rune('a'+i))
			r := must[reservation.Reservation](t)(f.store.Claim(ctx, request(id, "show", "A1")))
			if _, ok := f.reconEntry(t, id); ok {
				t.Fatal("a fresh hold is on the reconciliation index")
			}
			at := make([]time.Time, len(tc.steps))
			for j, st := range tc.steps {
				f.clock.Advance(st.advance)
				at[j] = f.clock.Now()
				next, err := st.do(ctx, f, r)
				if err != nil {
					t.Fatalf("step %q: %v", st.name, err)
				}
				r = next
				since, on := f.reconEntry(t, id)
				if on != st.want {
					t.Fatalf("step %q (%s/%s): on the index %v, want %v", st.name, r.Inventory, r.Payment, on, st.want)
				}
				if on != r.Unsettled() {
					t.Fatalf("step %q: stored entry %v disagrees with Reservation.Unsettled", st.name, on)
				}
				if !on {
					continue
				}
				want := at[j]
				if st.sinceStep >= 0 {
					want = at[st.sinceStep]
				}
				if !since.Equal(want) || !r.ReconcileSince.Equal(want) {
					t.Fatalf("step %q: on the index since %s (returned %s), want %s", st.name, since, r.ReconcileSince, want)
				}
				// The listing finds it from the moment it joined, not before.
				listed := must[[]reservation.Reservation](t)(f.store.NeedingReconciliation(ctx, want.Add(time.Nanosecond), 0))
				if len(listed) != 1 || listed[0].ID != id || !listed[0].ReconcileSince.Equal(want) {
					t.Fatalf("step %q: listing %+v", st.name, listed)
				}
				if early := must[[]reservation.Reservation](t)(f.store.NeedingReconciliation(ctx, want, 0)); len(early) != 0 {
					t.Fatalf("step %q: listed before it joined: %+v", st.name, early)
				}
			}
			if listed := must[[]reservation.Reservation](t)(f.store.NeedingReconciliation(ctx, f.clock.Now().Add(time.Hour), 0)); (len(listed) == 1) != tc.steps[len(tc.steps)-1].want {
				t.Fatalf("final listing %+v", listed)
			}
		})
	}
}
