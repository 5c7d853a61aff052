package sweeper_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
	"github.com/seatsaga/seatsaga/internal/sweeper"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

type ddbRig struct {
	env   *ddbtest.Env
	clock *clock.Fake
	inv   *inventory.Store
}

func newDDBRig(t *testing.T) *ddbRig {
	t.Helper()
	env := ddbtest.New(t)
	c := clock.NewFake(time.Now().UTC().Truncate(time.Millisecond))
	inv, err := inventory.New(inventory.Config{Client: env.Client, Names: env.Names, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &ddbRig{env: env, clock: c, inv: inv}
}

func (r *ddbRig) sweeper(t *testing.T, now func() time.Time, provider saga.Payments) *sweeper.Sweeper {
	t.Helper()
	inv, err := inventory.New(inventory.Config{Client: r.env.Client, Names: r.env.Names, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := saga.New(saga.Deps{Store: inv, Payments: provider, Now: now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Policy: reservation.LateSuccessReacquire, Hold: 10 * time.Minute, Limits: reservation.DefaultLimits()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sweeper.New(sweeper.Deps{Backlog: inv, Expirer: inv, Reconciler: steps, SFN: sagatest.NewStepFunctions(), Running: noneRunning{}, StateMachineARN: sweeper.Machine,
		Grace: 2 * time.Minute, Now: now, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// noneRunning is a state machine with no RUNNING execution.
type noneRunning struct{}

func (noneRunning) RunningExecutions(context.Context, string, string) (sweeper.RunningPage, error) {
	return sweeper.RunningPage{}, nil
}

func (r *ddbRig) claim(t *testing.T, id string, seats ...string) reservation.Reservation {
	t.Helper()
	res, err := r.inv.Claim(context.Background(), reservation.ClaimRequest{ReservationID: id, CustomerID: "c-" + id,
		EventID: "ev1", SeatIDs: seats, Amount: 100, Currency: "eur", HoldDuration: 10 * time.Minute, IdempotencyKey: "k-" + id})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// outboxTypes lists the outbox event types written for a reservation.
func (r *ddbRig) outboxTypes(t *testing.T, id string) map[outbox.Type]int {
	t.Helper()
	out, err := r.env.Client.Scan(context.Background(), &dynamodb.ScanInput{
		TableName:                 aws.String(r.env.Names.Of(tables.OutboxTable)),
		FilterExpression:          aws.String("#r = :r"),
		ExpressionAttributeNames:  map[string]string{"#r": outbox.AttrReservationID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[outbox.Type]int{}
	for _, item := range out.Items {
		if v, ok := item[outbox.AttrType].(*types.AttributeValueMemberS); ok {
			counts[outbox.Type(v.Value)]++
		}
	}
	return counts
}

// TestSweeperReleasesOrphanedHoldOnDynamoDB: a hold whose execution is gone is released once,
// however many sweepers run at the same time, and the next buyer can claim the seat.
func TestSweeperReleasesOrphanedHoldOnDynamoDB(t *testing.T) {
	r := newDDBRig(t)
	ctx := context.Background()
	if err := r.inv.CreateSeats(ctx, "ev1", inventory.SeatsAt(100, "eur", "A1", "A2")); err != nil {
		t.Fatal(err)
	}
	held := r.claim(t, "r_orphan", "A1")
	later := held.HoldExpiresAt.Add(2*time.Minute + time.Second)
	now := clock.NewFake(later).Now

	var wg sync.WaitGroup
	results := make([]sweeper.Result, 3)
	for i := range results {
		s := r.sweeper(t, now, sagatest.NewPayments())
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, err := s.Run(ctx)
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}(i)
	}
	wg.Wait()
	released := 0
	for _, res := range results {
		released += res.Released
		if res.Errors != 0 {
			t.Fatalf("errors: %+v", res)
		}
	}
	if released != 1 {
		t.Fatalf("released %d times: %+v", released, results)
	}
	got, err := r.inv.Get(ctx, "r_orphan")
	if err != nil || got.Inventory != reservation.Released || got.Outcome != reservation.OutcomeExpired {
		t.Fatalf("reservation %+v %v", got, err)
	}
	if n := r.outboxTypes(t, "r_orphan")[outbox.SeatsReleased]; n != 1 {
		t.Fatalf("%d SeatsReleased events", n)
	}
	r.clock.Set(later)
	if _, err := r.inv.Claim(ctx, reservation.ClaimRequest{ReservationID: "r_next", CustomerID: "bob", EventID: "ev1",
		SeatIDs: []string{"A1"}, Amount: 100, Currency: "eur", HoldDuration: 10 * time.Minute, IdempotencyKey: "k"}); err != nil {
		t.Fatalf("the next buyer cannot claim the released seat: %v", err)
	}
	s := r.sweeper(t, now, sagatest.NewPayments())
	if res, err := s.Run(ctx); err != nil || res.ReconciliationBacklog != 0 || res.Released != 0 {
		t.Fatalf("second sweep %+v %v", res, err)
	}
}

// TestSweeperRacingConfirmOnDynamoDB: the saga's Confirm (whose clock says the hold is still
// live) races the sweeper (whose clock, skewed ahead, says it lapsed past the grace period) on
// an authorized reservation. Whoever writes first wins; the seats end CONFIRMED exactly once,
// the payment is captured at most once and never voided.
func TestSweeperRacingConfirmOnDynamoDB(t *testing.T) {
	r := newDDBRig(t)
	ctx := context.Background()
	const rounds = 4
	seats := make([]string, rounds)
	for i := range seats {
		seats[i] = fmt.Sprintf("S%d", i)
	}
	if err := r.inv.CreateSeats(ctx, "ev1", inventory.SeatsAt(100, "eur", seats...)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rounds; i++ {
		id := fmt.Sprintf("r_race%d", i)
		res := r.claim(t, id, seats[i])
		res, err := r.inv.StartPayment(ctx, id, reservation.GuardOf(res))
		if err != nil {
			t.Fatal(err)
		}
		res, err = r.inv.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(res),
			Event: reservation.StartAuthorization, From: reservation.NotStarted, PaymentIntentID: "pi_" + id, TaskToken: "tok"})
		if err != nil {
			t.Fatal(err)
		}
		res, err = r.inv.UpdatePayment(ctx, reservation.PaymentUpdate{ReservationID: id, Guard: reservation.GuardOf(res),
			Event: reservation.AuthorizationOK, From: reservation.Authorizing})
		if err != nil {
			t.Fatal(err)
		}
		confirmAt := res.HoldExpiresAt.Add(-time.Second)
		sweepAt := res.HoldExpiresAt.Add(2*time.Minute + time.Second)
		confirmer, err := inventory.New(inventory.Config{Client: r.env.Client, Names: r.env.Names, Now: clock.NewFake(confirmAt).Now})
		if err != nil {
			t.Fatal(err)
		}
		provider := sagatest.NewPayments()
		provider.PutAuthorized(id, "pi_"+id, 100, "eur")
		s := r.sweeper(t, clock.NewFake(sweepAt).Now, provider)

		var wg sync.WaitGroup
		var confirmErr error
		var sweep sweeper.Result
		wg.Add(2)
		go func() {
			defer wg.Done()
			if i%2 == 1 {
				// Let the sweeper get ahead in every other round, so both orders are exercised.
				time.Sleep(time.Duration(i) * 100 * time.Millisecond)
			}
			_, confirmErr = confirmer.Confirm(ctx, id, reservation.GuardOf(res))
		}()
		go func() {
			defer wg.Done()
			var err error
			if sweep, err = s.Run(ctx); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()

		got, err := r.inv.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		events := r.outboxTypes(t, id)
		if sweep.Errors != 0 || sweep.Released != 0 || sweep.Reconciled+sweep.LostRaces != 1 {
			t.Fatalf("round %d: sweep %+v; want the reservation reconciled (or the race to the confirm lost), never released", i, sweep)
		}
		// The confirm either won, or lost to the sweeper's reacquire by the version it held.
		var stale *reservation.StaleVersion
		switch {
		case confirmErr == nil && events[outbox.ReservationConfirmed] != 1:
			t.Fatalf("round %d: confirm reported success without its event: %v", i, events)
		case confirmErr != nil && (!errors.As(confirmErr, &stale) || events[outbox.SeatsReacquired] != 1):
			t.Fatalf("round %d: confirm failed with %v, events %v; want a stale version and the sweeper's reacquire", i, confirmErr, events)
		}
		if got.Inventory != reservation.Confirmed {
			t.Fatalf("round %d: reservation ended %s/%s", i, got.Inventory, got.Payment)
		}
		if events[outbox.ReservationConfirmed]+events[outbox.SeatsReacquired] != 1 || events[outbox.SeatsReleased] != 0 || events[outbox.PaymentVoided] != 0 {
			t.Fatalf("round %d: both won or a release slipped in: %v", i, events)
		}
		if provider.Cancels() != 0 {
			t.Fatalf("round %d: the authorization was voided", i)
		}
		if n := provider.Captures(); n > 1 || (got.Payment == reservation.Paid) != (n == 1) {
			t.Fatalf("round %d: %d captures for a payment recorded %s", i, n, got.Payment)
		}
		seat, ok, err := r.inv.GetSeat(ctx, "ev1", seats[i])
		if err != nil || !ok || seat.State != reservation.Confirmed || seat.ReservationID != id {
			t.Fatalf("round %d: seat %+v %v %v", i, seat, ok, err)
		}
	}
}
