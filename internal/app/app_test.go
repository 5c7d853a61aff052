package app

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/consumer"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/outbox"
	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/relay"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/secrets"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/statemachine"
)

type noPayments struct{ payment.Provider }

// full is Deps with every client given; no call reaches them.
func full() Deps {
	return Deps{
		Config: config.Config{StateMachineARN: "arn:aws:states:eu-west-1:000000000000:stateMachine:reservation",
			LateSuccessPolicy: "reacquire", EventBusName: "bus", Tables: tables.Names{Prefix: "t-"}},
		DynamoDB:      dynamodb.New(dynamodb.Options{Region: "eu-west-1"}),
		SFN:           sfn.New(sfn.Options{Region: "eu-west-1"}),
		Payments:      noPayments{},
		Bus:           relay.NewMemoryBus(),
		Sender:        &consumer.MemorySender{},
		WebhookSecret: secrets.Static("whsec_x"),
	}
}

func TestStepsSettings(t *testing.T) {
	d := full()
	d.Config = config.Config{LateSuccessPolicy: "void", Hold: 90 * time.Second, MaxSeats: 4}
	d.ReconcileAttempts = 7
	a, err := build(d, FnClaim)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Steps
	if s.Store == nil || s.Payments == nil || s.Now == nil || s.Log == nil || s.Metrics == nil {
		t.Fatalf("steps not wired: %+v", s)
	}
	// The saga talks to the DynamoDB inventory itself, with no adapter in between that could
	// drop what the saga asks it to store.
	if _, ok := s.Store.(*inventory.Store); !ok {
		t.Fatalf("steps.Store is a %T, want *inventory.Store", s.Store)
	}
	if s.Policy != reservation.LateSuccessVoid || s.Hold != 90*time.Second || s.Limits.MaxSeats != 4 || s.ReconcileAttempts != 7 {
		t.Fatalf("settings lost: %+v", s)
	}

	d.Config.LateSuccessPolicy = "keep"
	if _, err := build(d, FnClaim); err == nil {
		t.Fatal("unknown late-success policy accepted")
	}
}

// Each function is built alone, as its Lambda builds it; a missing client fails the cold start
// of exactly the functions that use it.
func TestBuildChecksWhatEachFunctionUses(t *testing.T) {
	fns := []string{FnClaim, FnAPI, FnWebhook, FnSweeper, FnConsumer, FnRelay}
	cases := []struct {
		name    string
		mutate  func(d *Deps)
		wantErr []string
	}{
		{name: "every client given", mutate: func(*Deps) {}},
		{name: "no DynamoDB", mutate: func(d *Deps) { d.DynamoDB = nil },
			wantErr: []string{FnClaim, FnAPI, FnWebhook, FnSweeper, FnConsumer}},
		{name: "no Step Functions", mutate: func(d *Deps) { d.SFN = nil },
			wantErr: []string{FnAPI, FnWebhook, FnSweeper}},
		{name: "no payments", mutate: func(d *Deps) { d.Payments = nil },
			wantErr: []string{FnClaim, FnWebhook, FnSweeper}},
		{name: "no state machine", mutate: func(d *Deps) { d.Config.StateMachineARN = "" },
			wantErr: []string{FnAPI}},
		{name: "no bus", mutate: func(d *Deps) { d.Bus = nil }, wantErr: []string{FnRelay}},
		{name: "no sender", mutate: func(d *Deps) { d.Sender = nil }, wantErr: []string{FnConsumer}},
		{name: "no webhook secret", mutate: func(d *Deps) { d.WebhookSecret = nil }, wantErr: []string{FnWebhook}},
	}
	for _, tc := range cases {
		for _, fn := range fns {
			t.Run(tc.name+"/"+fn, func(t *testing.T) {
				d := full()
				tc.mutate(&d)
				a, err := build(d, fn)
				if want := slices.Contains(tc.wantErr, fn); (err != nil) != want {
					t.Fatalf("err = %v, want error %v", err, want)
				}
				if err == nil && a.handlers[fn] == nil {
					t.Fatal("no handler")
				}
			})
		}
	}
	if _, err := build(full(), "nope"); err == nil {
		t.Fatal("unknown function built")
	}
}

func TestNewBuildsEveryFunction(t *testing.T) {
	a, err := New(full())
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(a.Handlers()); !slices.Equal(got, sorted(functions)) {
		t.Fatalf("handlers %v, want %v", got, sorted(functions))
	}
	for fn, h := range a.Handlers() {
		if h == nil {
			t.Errorf("function %s has no handler", fn)
		}
	}
	if a.Steps == nil || a.Relay == nil {
		t.Fatalf("steps %v relay %v", a.Steps, a.Relay)
	}
	// The relay publishes on the configured bus.
	env, err := outbox.New(outbox.SeatsHeld, "r-1", 1, time.Now(), "c-1", outbox.ReservationSnapshot{})
	if err != nil {
		t.Fatal(err)
	}
	if e, _, err := a.Relay.Entry(env); err != nil || aws.ToString(e.EventBusName) != "bus" {
		t.Fatalf("entry %+v %v", e, err)
	}

	// Without a bus the outbox stays unpublished: no relay, everything else.
	d := full()
	d.Bus = nil
	if a, err = New(d); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Handlers()[FnRelay]; ok || a.Relay != nil {
		t.Fatal("a relay without a bus")
	}
	if len(a.Handlers()) != len(functions)-1 {
		t.Fatalf("handlers %v", keys(a.Handlers()))
	}
}

func TestLambdaRejectsAnUnknownFunction(t *testing.T) {
	if _, err := FromEnv(context.Background(), "nope"); err == nil {
		t.Fatal("unknown function accepted")
	}
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// The state machine invokes its steps by the product's function names: the statemachine
// package's step list and the functions App builds must name the same six.
func TestTheStateMachinesStepsAreFunctionsOfTheApp(t *testing.T) {
	var invoked []string
	for _, st := range statemachine.Steps {
		invoked = append(invoked, st.Name)
		if !slices.Contains(functions, st.Name) {
			t.Errorf("the state machine invokes %q, which is no function of the app (%v)", st.Name, functions)
		}
	}
	for _, fn := range []string{FnClaim, FnAuthorize, FnConfirm, FnCapture, FnCompensate, FnReconcile} {
		if !slices.Contains(invoked, fn) {
			t.Errorf("step function %s is not invoked by the state machine (%v)", fn, invoked)
		}
	}
}
