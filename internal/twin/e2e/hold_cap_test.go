package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

// A customer's reservations give their places under the cap (two by default) back as they
// end, sold or declined, not when the places' time runs out: two new reservations are let
// through at once, and a third while those two are in progress is refused hold_limit.
func TestAReservationThatEndsGivesItsPlaceUnderTheCapBackAtOnce(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 5)
	sold := Input("alice", "k1", "ev1", stripesim.PaymentMethodVisa, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(sold)), saga.EndConfirmed)
	declined := Input("alice", "k2", "ev1", stripesim.PaymentMethodDeclined, seats[1])
	e.ExpectEnding(e.Finish(e.Reserve(declined)), saga.EndPaymentDeclined)

	// Both places are free again: two reservations go through while both are in progress
	// (their executions wait for the payment that the gate keeps from starting here).
	open, _ := e.Gate("authorize")
	defer open()
	e.Reserve(Input("alice", "k3", "ev1", stripesim.PaymentMethodVisa, seats[2]))
	e.Reserve(Input("alice", "k4", "ev1", stripesim.PaymentMethodVisa, seats[3]))
	third := callAPI(e, http.MethodPost, "/events/ev1/reservations", "alice", "k5", createBody(SeatPrice, stripesim.PaymentMethodVisa, seats[4]))
	if third.Status != http.StatusConflict || third.str("code") != "hold_limit" {
		t.Fatalf("a third reservation in progress: %d %s, want 409 hold_limit", third.Status, third.Raw)
	}
}

// A retry of a declined reservation's POST sent once its admission record is gone (TTL removes
// it after the retention; the reservation stays) passes the replay read and reaches the gate,
// which answers it from the stored reservation: it takes no place under the cap, so two new
// reservations are let through while a third is refused hold_limit, and the api's deployed
// grants allow the gate's check on the reservation.
func TestARetryOfAnEndedReservationIsAnsweredWithoutTakingAPlace(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 4)
	declined := Input("alice", "k1", "ev1", stripesim.PaymentMethodDeclined, seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(declined)), saga.EndPaymentDeclined)
	if _, err := e.Stack.DynamoDB.DeleteItem(e.Ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(e.Stack.Names.Of(tables.AdmissionsTable)),
		Key:       map[string]ddbtypes.AttributeValue{tables.AttrReservationID: &ddbtypes.AttributeValueMemberS{Value: declined.ReservationID}},
	}); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(api.CreateRequest{SeatIDs: declined.SeatIDs, PaymentMethod: declined.PaymentMethod})
	retry := callAPI(e, http.MethodPost, "/events/ev1/reservations", "alice", "k1", string(body))
	if retry.Status != http.StatusAccepted || retry.str("status") != string(reservation.Released) {
		t.Fatalf("the retry of the declined reservation: %d %s, want 202 with the stored RELEASED reservation", retry.Status, retry.Raw)
	}

	open, _ := e.Gate("authorize")
	defer open()
	e.Reserve(Input("alice", "k2", "ev1", stripesim.PaymentMethodVisa, seats[1]))
	e.Reserve(Input("alice", "k3", "ev1", stripesim.PaymentMethodVisa, seats[2]))
	third := callAPI(e, http.MethodPost, "/events/ev1/reservations", "alice", "k4", createBody(SeatPrice, stripesim.PaymentMethodVisa, seats[3]))
	if third.Status != http.StatusConflict || third.str("code") != "hold_limit" {
		t.Fatalf("a third reservation in progress: %d %s, want 409 hold_limit", third.Status, third.Raw)
	}
}

// A reservation declined for a payment method the provider does not know ends by the
// authorize step's own record, with no webhook: its place under the cap comes back with the
// seats all the same.
func TestAnUnknownPaymentMethodsDeclineGivesItsPlaceUnderTheCapBack(t *testing.T) {
	e := New(t, Options{})
	seats := e.Seed("ev1", 4)
	declined := Input("alice", "k1", "ev1", "pm_that_stripe_never_issued", seats[0])
	e.ExpectEnding(e.Finish(e.Reserve(declined)), saga.EndPaymentDeclined)

	open, _ := e.Gate("authorize")
	defer open()
	e.Reserve(Input("alice", "k2", "ev1", stripesim.PaymentMethodVisa, seats[1]))
	e.Reserve(Input("alice", "k3", "ev1", stripesim.PaymentMethodVisa, seats[2]))
	third := callAPI(e, http.MethodPost, "/events/ev1/reservations", "alice", "k4", createBody(SeatPrice, stripesim.PaymentMethodVisa, seats[3]))
	if third.Status != http.StatusConflict || third.str("code") != "hold_limit" {
		t.Fatalf("a third reservation in progress: %d %s, want 409 hold_limit", third.Status, third.Raw)
	}
}
