package app

import (
	"context"
	"fmt"
	"reflect"

	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/saga"
)

var contextType = reflect.TypeFor[context.Context]()

// withInvocation returns fn's Lambda handler h as a function of the very same type (so that
// the Lambda runtime, the local host and callers that assert its type see no difference) that
// begins each invocation before h runs: the context h receives carries the invocation's
// service, request id, X-Ray trace id and cold start (obs.Invocations.Begin), and for a saga
// step the reservation and correlation ids of its event, so every line any code logs with that
// context carries them, and no handler has to remember to add them.
//
// A handler that takes no context first could log no line of its invocation with those fields,
// so it is refused rather than served without them.
func withInvocation(fn string, h any) (any, error) {
	v := reflect.ValueOf(h)
	if !v.IsValid() || v.Kind() != reflect.Func || v.IsNil() {
		return nil, fmt.Errorf("the handler is %T, not a function", h)
	}
	t := v.Type()
	if t.NumIn() == 0 || t.In(0) != contextType || t.IsVariadic() {
		return nil, fmt.Errorf("the handler (%s) does not take the invocation's context first, so its lines could not carry the invocation's ids", t)
	}
	invocations := &obs.Invocations{Service: fn}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		ctx, _ := args[0].Interface().(context.Context)
		if ctx == nil {
			ctx = context.Background()
		}
		ctx = invocations.Begin(ctx)
		if len(args) > 1 {
			if reservation, correlation := eventIDs(args[1].Interface()); reservation != "" {
				ctx = obs.WithReservation(ctx, reservation)
				if correlation != "" {
					ctx = obs.WithCorrelation(ctx, correlation)
				}
			}
		}
		args[0] = reflect.ValueOf(ctx)
		return v.Call(args)
	}).Interface(), nil
}

// eventIDs returns the reservation and correlation ids a saga step's event names: every step
// acts on one reservation, and says so on each line, the payment adapter's too. Other
// functions' events hold many reservations or none until they are read; their handlers put the
// ids they learn in the context themselves.
func eventIDs(event any) (reservationID, correlationID string) {
	switch e := event.(type) {
	case saga.State:
		return e.ReservationID, e.CorrelationID
	case saga.AuthorizeEvent:
		return e.Input.ReservationID, e.Input.CorrelationID
	}
	return "", ""
}
