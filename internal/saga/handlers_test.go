package saga

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// A step's Lambda handler returns the routed error unwrapped, so the Lambda runtime names it
// as the ASL matches, and passes a step's success through.
func TestAStepHandlerUnwrapsTheRoutedError(t *testing.T) {
	declined := &PaymentDeclined{ReservationID: "r1"}
	h := handler(func(context.Context, int) (string, error) { return "out", fmt.Errorf("authorize: %w", declined) })
	out, err := h(context.Background(), 1)
	if out != "out" || err != error(declined) || !errors.Is(err, declined) {
		t.Fatalf("%q %v; want the *PaymentDeclined itself", out, err)
	}
	if got, err := handler(func(context.Context, int) (int, error) { return 7, nil })(context.Background(), 0); err != nil || got != 7 {
		t.Fatalf("success passed through as %d, %v; want 7, nil", got, err)
	}
	if got := len((&Steps{}).Handlers()); got != 6 {
		t.Fatalf("%d step handlers, want the six steps", got)
	}
}
