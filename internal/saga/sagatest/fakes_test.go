package sagatest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga/sagatest"
)

var _ payment.Provider = (*sagatest.Payments)(nil)

const machine = "arn:aws:states:us-east-1:000000000000:stateMachine:reservation"

// TestStepFunctionsKeepsAWSRules: a start is idempotent for the same name and input while the
// execution runs and ExecutionAlreadyExists otherwise; an unknown execution does not exist; a
// task token takes one answer, later ones are TaskTimedOut; injected errors come first.
func TestStepFunctionsKeepsAWSRules(t *testing.T) {
	ctx := context.Background()
	f := sagatest.NewStepFunctions()
	start := func(input string) error {
		_, err := f.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(machine), Name: aws.String("r_1"), Input: aws.String(input)})
		return err
	}
	if err := start(`{"a":1}`); err != nil {
		t.Fatal(err)
	}
	if err := start(`{"a":1}`); err != nil {
		t.Fatalf("the same start again: %v", err)
	}
	var exists *sfntypes.ExecutionAlreadyExists
	if err := start(`{"a":2}`); !errors.As(err, &exists) {
		t.Fatalf("another input under the name: %v", err)
	}
	arn := sagatest.ExecutionARN(machine, "r_1")
	f.SetStatus(arn, sfntypes.ExecutionStatusSucceeded)
	if err := start(`{"a":1}`); !errors.As(err, &exists) {
		t.Fatalf("the name of a finished execution: %v", err)
	}
	if d, err := f.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)}); err != nil ||
		d.Status != sfntypes.ExecutionStatusSucceeded || aws.ToString(d.Input) != `{"a":1}` {
		t.Fatalf("describe: %+v %v", d, err)
	}
	var missing *sfntypes.ExecutionDoesNotExist
	if _, err := f.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn + "x")}); !errors.As(err, &missing) {
		t.Fatalf("describe of an unknown execution: %v", err)
	}
	if f.Started() != 1 || f.Calls(sagatest.SFNStartExecution) != 4 {
		t.Fatalf("started %d, calls %d", f.Started(), f.Calls(sagatest.SFNStartExecution))
	}

	boom := errors.New("boom")
	f.FailNext(sagatest.SFNSendTaskSuccess, boom)
	success := &sfn.SendTaskSuccessInput{TaskToken: aws.String("tok"), Output: aws.String("{}")}
	if _, err := f.SendTaskSuccess(ctx, success); !errors.Is(err, boom) {
		t.Fatalf("injected: %v", err)
	}
	if _, err := f.SendTaskSuccess(ctx, success); err != nil {
		t.Fatal(err)
	}
	var closed *sfntypes.TaskTimedOut
	if _, err := f.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String("tok"), Error: aws.String("E")}); !errors.As(err, &closed) {
		t.Fatalf("an answer to a closed token: %v", err)
	}
	if n, s := len(f.Answers()), len(f.Successes()); n != 3 || s != 1 || len(f.Failures()) != 0 {
		t.Fatalf("%d answers, %d accepted successes, failures %+v", n, s, f.Failures())
	}
}

// TestPaymentsKeepStripeRules walks a PaymentIntent through the provider's rules.
func TestPaymentsKeepStripeRules(t *testing.T) {
	ctx := context.Background()
	p := sagatest.NewPayments()
	a, err := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: "r_1", Amount: 2500, Currency: "eur"})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := p.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{ReservationID: "r_1", Amount: 2500, Currency: "eur"}); again.PaymentIntentID != a.PaymentIntentID || p.Creates() != 1 {
		t.Fatalf("a second create made another intent: %+v", again)
	}
	a, err = p.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{ReservationID: "r_1", PaymentIntentID: a.PaymentIntentID,
		PaymentMethod: sagatest.PaymentMethodAuthorizes, Attempt: 1})
	if err != nil || a.State != payment.StateAuthorized || a.AmountCapturable != 2500 {
		t.Fatalf("confirm: %+v %v", a, err)
	}
	lost := errors.New("connection reset")
	p.LoseResponses(sagatest.PayCapture, lost)
	if _, err := p.Capture(ctx, payment.CaptureRequest{ReservationID: "r_1", PaymentIntentID: a.PaymentIntentID}); !errors.Is(err, lost) {
		t.Fatalf("capture with its answer lost: %v", err)
	}
	if c, err := p.Capture(ctx, payment.CaptureRequest{ReservationID: "r_1", PaymentIntentID: a.PaymentIntentID}); err != nil || c.State != payment.StatePaid || p.Captures() != 1 {
		t.Fatalf("capture retried: %+v %v, %d captures", c, err, p.Captures())
	}
	cancel := payment.CancelRequest{ReservationID: "r_1", PaymentIntentID: a.PaymentIntentID, Attempt: 1}
	var refused *payment.Failed
	if _, err := p.Cancel(ctx, cancel); !errors.As(err, &refused) || p.Cancels() != 0 {
		t.Fatalf("void after capture: %v", err)
	}
	p.RefundStatus = payment.RefundPending
	rf, err := p.Refund(ctx, payment.RefundRequest{ReservationID: "r_1", PaymentIntentID: a.PaymentIntentID, Attempt: 1})
	if err != nil || rf.Status != payment.RefundPending {
		t.Fatalf("refund: %+v %v", rf, err)
	}
	if got, _ := p.Retrieve(ctx, a.PaymentIntentID); got.State != payment.StateRefunded {
		t.Fatalf("the intent counts a pending refund as refunded, as Stripe's does: %+v", got)
	}
	p.SettleRefund(rf.RefundID, payment.RefundFailed)
	if got, _ := p.RetrieveRefund(ctx, rf.RefundID); got.Status != payment.RefundFailed {
		t.Fatalf("refund after settling: %+v", got)
	}
	if got, _ := p.Retrieve(ctx, a.PaymentIntentID); got.State != payment.StatePaid {
		t.Fatalf("a failed refund leaves the money captured: %+v", got)
	}
	if _, err := p.Retrieve(ctx, "pi_none"); !errors.As(err, &refused) || refused.HTTPStatus != 404 {
		t.Fatalf("retrieve of an unknown intent: %v", err)
	}
}

// TestIndexedStoreListsAndExpiresAsTheDynamoDBStore: the hold index lists lapsed HELD and
// PAYMENT_PENDING holds by deadline; Expire is fenced by state and version.
func TestIndexedStoreListsAndExpiresAsTheDynamoDBStore(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	x := sagatest.NewIndexedStore(clk.Now)
	hold := func(id string, ago time.Duration, st reservation.InventoryState) reservation.Reservation {
		r := reservation.Reservation{ID: id, CustomerID: "c", EventID: "ev1", SeatIDs: []string{id}, Amount: 100, Currency: "EUR",
			Inventory: st, Payment: reservation.NotStarted, Version: 1, HoldExpiresAt: t0.Add(-ago)}
		x.Put(r)
		return r
	}
	late := hold("r_late", 5*time.Minute, reservation.Held)
	hold("r_later", time.Minute, reservation.Held)
	hold("r_live", -time.Minute, reservation.Held)
	hold("r_gone", 10*time.Minute, reservation.Released)
	listed, err := x.ExpiredHolds(ctx, t0, 0)
	if err != nil || len(listed) != 2 || listed[0].ID != "r_late" || listed[1].ID != "r_later" {
		t.Fatalf("expired holds %+v %v", listed, err)
	}
	var unexpected *reservation.UnexpectedState
	if _, err := x.Expire(ctx, late.ID, reservation.PaymentPending, reservation.GuardOf(late)); !errors.As(err, &unexpected) {
		t.Fatalf("expire from another state: %v", err)
	}
	x.BeforeExpire = func(id string) {
		r, _ := x.Reservation(id)
		r.Version++
		x.Put(r)
	}
	var stale *reservation.StaleVersion
	if _, err := x.Expire(ctx, late.ID, reservation.Held, reservation.GuardOf(late)); !errors.As(err, &stale) {
		t.Fatalf("expire raced by a writer: %v", err)
	}
	x.BeforeExpire = nil
	cur, _ := x.Reservation(late.ID)
	if got, err := x.Expire(ctx, late.ID, reservation.Held, reservation.GuardOf(cur)); err != nil || got.Inventory != reservation.Released {
		t.Fatalf("expire: %+v %v", got, err)
	}
	if recs := x.Records(late.ID); len(recs) != 1 || recs[0].Type != outbox.SeatsReleased {
		t.Fatalf("outbox %+v", recs)
	}
}
