package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

// dynamoGate is the api's store on DynamoDB Local: the real inventory, as reservation store and
// admission gate, with seats of event ev1 at 25.00, a fake Step Functions and a fake clock that
// starts on the wall clock (DynamoDB Local collects items by TTL on the wall clock).
type dynamoGate struct {
	ctx context.Context
	env *ddbtest.Env
	clk *clock.Fake
	inv *inventory.Store
	sf  *sagatest.StepFunctions
}

func onDynamoDB(t *testing.T, seats ...string) dynamoGate {
	t.Helper()
	g := dynamoGate{ctx: context.Background(), clk: clock.NewFake(time.Now().UTC().Truncate(time.Second)), sf: sagatest.NewStepFunctions()}
	g.env = ddbtest.New(t, tables.Seats(), tables.Reservations(), tables.Outbox(), tables.Admissions())
	g.sf.Now = g.clk.Now
	var err error
	if g.inv, err = inventory.New(inventory.Config{Client: g.env.Client, Names: g.env.Names, Now: g.clk.Now}); err != nil {
		t.Fatal(err)
	}
	if err := g.inv.CreateSeats(g.ctx, "ev1", inventory.SeatsAt(2500, "eur", seats...)); err != nil {
		t.Fatal(err)
	}
	return g
}

// handler is the api over g, at most 3 seats a request and 2 reservations a customer; d's
// Reservations, SFN, Seats and Metrics replace g's store, g's Step Functions, the seats-only
// catalog and a fresh recorder when set.
func (g dynamoGate) handler(t *testing.T, d Deps) *Handler {
	t.Helper()
	if d.Reservations == nil {
		d.Reservations = g.inv
	}
	if d.SFN == nil {
		d.SFN = g.sf
	}
	if d.Seats == nil {
		d.Seats = &DynamoCatalog{Client: g.env.Client, Table: g.env.Names.Of(tables.SeatsTable)}
	}
	if d.Metrics == nil {
		d.Metrics = metrics.NewMemory()
	}
	d.Admissions, d.StateMachineARN, d.MaxSeats, d.MaxActiveReservations, d.Now = g.inv, testMachine, 3, 2, g.clk.Now
	d.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	h, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// racingReads is the store with the saga running between a read and what follows it:
// afterMiss, when set, runs once right after a read finds no reservation.
type racingReads struct {
	ReservationStore
	afterMiss func()
}

func (r *racingReads) Get(ctx context.Context, id string) (reservation.Reservation, error) {
	got, err := r.ReservationStore.Get(ctx, id)
	var nf *reservation.NotFound
	if errors.As(err, &nf) && r.afterMiss != nil {
		race := r.afterMiss
		r.afterMiss = nil
		race()
	}
	return got, err
}

// A retry of a POST whose replay read found no reservation (the saga had not claimed yet) but
// that reaches the gate after the saga claimed and the hold ended is answered from the stored
// reservation, as a replay is: no execution starts, and the retry takes no place under the cap
// and leases no seat. The gate is the real one, on DynamoDB Local.
func TestARetryAfterTheHoldEndedIsNotReadmitted(t *testing.T) {
	ends := map[string]func(t *testing.T, inv *inventory.Store, clk *clock.Fake, r reservation.Reservation){
		"released": func(t *testing.T, inv *inventory.Store, _ *clock.Fake, r reservation.Reservation) {
			if _, err := inv.Release(context.Background(), reservation.ReleaseRequest{ReservationID: r.ID, Guard: reservation.GuardOf(r), Reason: "declined"}); err != nil {
				t.Fatal(err)
			}
		},
		"expired": func(t *testing.T, inv *inventory.Store, clk *clock.Fake, r reservation.Reservation) {
			clk.Set(r.HoldExpiresAt.Add(time.Second))
			if _, err := inv.Expire(context.Background(), r.ID, reservation.Held, reservation.GuardOf(r)); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			g := onDynamoDB(t, "A1", "A2", "A3")
			ctx, inv, clk, sf := g.ctx, g.inv, g.clk, g.sf
			reads := &racingReads{ReservationStore: inv}
			h := g.handler(t, Deps{Reservations: reads})
			post := func(customer, key, seat string) answer {
				t.Helper()
				resp, err := h.Handle(ctx, postReq(customer, "ev1", key, `{"seatIds":["`+seat+`"],"paymentMethod":"pm_card_visa"}`))
				if err != nil {
					t.Fatal(err)
				}
				return answer{status: resp.StatusCode, body: resp.Body}
			}
			first := post("alice", "k1", "A1")
			var view ReservationStatus
			if err := json.Unmarshal([]byte(first.body), &view); err != nil || first.status != 202 {
				t.Fatalf("alice's POST: %d %s", first.status, first.body)
			}
			ex, ok := sf.Execution(sagatest.ExecutionARN(testMachine, view.ReservationID))
			var in saga.Input
			if !ok || json.Unmarshal([]byte(ex.Input), &in) != nil || in.SlotKey == "" {
				t.Fatalf("alice's execution %+v", ex)
			}
			// The saga claims and the hold ends between the retry's replay read and its gate.
			reads.afterMiss = func() {
				r, err := inv.Claim(ctx, reservation.ClaimRequest{ReservationID: in.ReservationID, CustomerID: in.CustomerID,
					EventID: in.EventID, SeatIDs: in.SeatIDs, Amount: in.Amount, Currency: in.Currency,
					HoldDuration: h.d.Hold, IdempotencyKey: in.IdempotencyKey, SlotKey: in.SlotKey})
				if err != nil {
					t.Fatal(err)
				}
				end(t, inv, clk, r)
			}
			retry := post("alice", "k1", "A1")
			stored, err := inv.Get(ctx, view.ReservationID)
			if err != nil {
				t.Fatal(err)
			}
			var got ReservationStatus
			if err := json.Unmarshal([]byte(retry.body), &got); err != nil || retry.status != 202 || got.Status != string(stored.Inventory) ||
				got.Version != stored.Version {
				t.Fatalf("the retry after the hold %s: %d %s, want 202 with the stored reservation (%s)", name, retry.status, retry.body, stored.Inventory)
			}
			if n := sf.Calls(sagatest.SFNStartExecution); n != 1 {
				t.Fatalf("%d StartExecution calls, want alice's first only", n)
			}
			for _, p := range []struct{ customer, key, seat string }{{"alice", "k2", "A2"}, {"alice", "k3", "A3"}, {"bob", "k1", "A1"}} {
				if got := post(p.customer, p.key, p.seat); got.status != 202 {
					t.Fatalf("%s's POST for %s after the retry: %d %s, want 202 (the retry took no place and leased no seat)",
						p.customer, p.seat, got.status, got.body)
				}
			}
		})
	}
}

// answer is one answer of the handler: its status and body.
type answer struct {
	status int
	body   string
}

// startTookEffectThenThrottled is Step Functions whose first start took effect, the saga
// claiming and starting the payment at once, while the api heard a throttle: the first
// attempt's answer was lost and the SDK's retry met the quota, which the api does not retry.
type startTookEffectThenThrottled struct {
	StepFunctions
	afterStart func(in saga.Input)
	done       bool
}

func (s *startTookEffectThenThrottled) StartExecution(ctx context.Context, in *sfn.StartExecutionInput, optFns ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	out, err := s.StepFunctions.StartExecution(ctx, in, optFns...)
	if err != nil || s.done {
		return out, err
	}
	s.done = true
	var input saga.Input
	if err := json.Unmarshal([]byte(*in.Input), &input); err != nil {
		return nil, err
	}
	s.afterStart(input)
	return nil, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}
}

// A start whose execution claimed before the api heard it throttled is queued; queueing must
// not shorten the place under the cap the claim keeps for as long as the hold lasts: while the
// payment is still pending, long after the queued start's time, the customer may hold only one
// more reservation.
func TestAStartQueuedAfterItsClaimKeepsItsPlaceUnderTheCap(t *testing.T) {
	g := onDynamoDB(t, "A1", "A2", "A3")
	ctx, inv, clk, sf := g.ctx, g.inv, g.clk, g.sf
	var h *Handler
	lossy := &startTookEffectThenThrottled{StepFunctions: sf, afterStart: func(in saga.Input) {
		r, err := inv.Claim(ctx, reservation.ClaimRequest{ReservationID: in.ReservationID, CustomerID: in.CustomerID,
			EventID: in.EventID, SeatIDs: in.SeatIDs, Amount: in.Amount, Currency: in.Currency,
			HoldDuration: h.d.Hold, IdempotencyKey: in.IdempotencyKey, SlotKey: in.SlotKey})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := inv.StartPayment(ctx, r.ID, reservation.GuardOf(r)); err != nil {
			t.Fatal(err)
		}
	}}
	h = g.handler(t, Deps{SFN: lossy})
	post := func(key, seat string) answer {
		t.Helper()
		resp, err := h.Handle(ctx, postReq("alice", "ev1", key, `{"seatIds":["`+seat+`"],"paymentMethod":"pm_card_visa"}`))
		if err != nil {
			t.Fatal(err)
		}
		return answer{status: resp.StatusCode, body: resp.Body}
	}
	if got := post("k1", "A1"); got.status != 202 {
		t.Fatalf("alice's first POST: %d %s", got.status, got.body)
	}
	// The payment is still pending (processing, or the provider silent) well past the queued
	// start's lease and hold; nothing has ended the reservation.
	clk.Advance(QueuedLease + 2*h.d.Hold)
	if got := post("k2", "A2"); got.status != 202 {
		t.Fatalf("alice's second reservation: %d %s, want 202", got.status, got.body)
	}
	if got := post("k3", "A3"); got.status != 409 || !strings.Contains(got.body, "hold_limit") {
		t.Fatalf("alice's third reservation while the first's payment is pending: %d %s, want 409 hold_limit", got.status, got.body)
	}
}

// Once TTL has removed an admission record, its reservation is the only trace of the request
// an Idempotency-Key was used for: another request under the key (other seats) reaches the
// gate, which finds the reservation written, and must be refused as a reused key, not answered
// with that reservation as if it were the new request's.
func TestAnotherRequestUnderAKeyWhoseAdmissionExpiredIsAReusedKey(t *testing.T) {
	g := onDynamoDB(t, "A1", "A2")
	ctx, env, inv, sf := g.ctx, g.env, g.inv, g.sf
	h := g.handler(t, Deps{})
	post := func(seat string) answer {
		t.Helper()
		resp, err := h.Handle(ctx, postReq("alice", "ev1", "k1", `{"seatIds":["`+seat+`"],"paymentMethod":"pm_card_visa"}`))
		if err != nil {
			t.Fatal(err)
		}
		return answer{status: resp.StatusCode, body: resp.Body}
	}
	if got := post("A1"); got.status != 202 {
		t.Fatalf("alice's POST: %d %s", got.status, got.body)
	}
	id := ReservationID("alice", "k1")
	ex, _ := sf.Execution(sagatest.ExecutionARN(testMachine, id))
	var in saga.Input
	if err := json.Unmarshal([]byte(ex.Input), &in); err != nil {
		t.Fatal(err)
	}
	r, err := inv.Claim(ctx, reservation.ClaimRequest{ReservationID: in.ReservationID, CustomerID: in.CustomerID,
		EventID: in.EventID, SeatIDs: in.SeatIDs, Amount: in.Amount, Currency: in.Currency,
		HoldDuration: h.d.Hold, IdempotencyKey: in.IdempotencyKey, SlotKey: in.SlotKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inv.Release(ctx, reservation.ReleaseRequest{ReservationID: r.ID, Guard: reservation.GuardOf(r), Reason: "declined"}); err != nil {
		t.Fatal(err)
	}
	// TTL removes the admission after its retention; the reservation stays.
	if _, err := env.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(env.Names.Of(tables.AdmissionsTable)),
		Key:       map[string]ddbtypes.AttributeValue{tables.AttrReservationID: &ddbtypes.AttributeValueMemberS{Value: id}},
	}); err != nil {
		t.Fatal(err)
	}
	if got := post("A2"); got.status != 409 || !strings.Contains(got.body, "idempotency_key_reused") {
		t.Fatalf("another request under alice's key: %d %s, want 409 idempotency_key_reused", got.status, got.body)
	}
	if got := post("A1"); got.status != 202 || !strings.Contains(got.body, string(reservation.Released)) {
		t.Fatalf("the same request again: %d %s, want 202 with the stored RELEASED reservation", got.status, got.body)
	}
}

// Once a start is throttled, the winners admitted while the mark lasts join the queue without
// a StartExecution call of their own (which the spent quota would refuse, and which would jump
// the queue when it did not); when the mark lapses, the next winner calls StartExecution again.
// The mark is read in the POST's one first read, on DynamoDB Local.
func TestWinnersAdmittedWhileStartsWaitJoinTheQueueWithoutAStartCall(t *testing.T) {
	g := onDynamoDB(t, "A1", "A2", "A3", "A4")
	ctx, clk, sf := g.ctx, g.clk, g.sf
	m := metrics.NewMemory()
	h := g.handler(t, Deps{Metrics: m,
		Seats: &DynamoCatalog{Client: g.env.Client, Table: g.env.Names.Of(tables.SeatsTable), AdmissionsTable: g.env.Names.Of(tables.AdmissionsTable)}})
	post := func(customer, seat string) ReservationStatus {
		t.Helper()
		resp, err := h.Handle(ctx, postReq(customer, "ev1", "k", `{"seatIds":["`+seat+`"],"paymentMethod":"pm_card_visa"}`))
		if err != nil || resp.StatusCode != 202 {
			t.Fatalf("%s's POST: %d %s %v", customer, resp.StatusCode, resp.Body, err)
		}
		var v ReservationStatus
		if err := json.Unmarshal([]byte(resp.Body), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	calls := func() int { return sf.Calls(sagatest.SFNStartExecution) }
	sf.FailNext(sagatest.SFNStartExecution, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"})
	if v := post("alice", "A1"); !v.Queued || calls() != 1 {
		t.Fatalf("the throttled winner: %+v, %d calls", v, calls())
	}
	clk.Advance(inventory.StartBacklogWindow / 2)
	if v := post("bob", "A2"); !v.Queued || calls() != 1 {
		t.Fatalf("a winner while starts wait: %+v, %d StartExecution calls, want queued with none of its own", v, calls())
	}
	if got := m.Get("ReservationsQueued", metrics.Dim{Name: "reason", Value: "backlog"}); got != 1 {
		t.Fatalf("%v queued for the backlog, want 1", got)
	}
	clk.Advance(inventory.StartBacklogWindow)
	if v := post("carol", "A3"); v.Queued || calls() != 2 || sf.Started() != 1 {
		t.Fatalf("a winner after the mark lapsed: %+v, %d calls, %d started; want started directly", v, calls(), sf.Started())
	}
}
