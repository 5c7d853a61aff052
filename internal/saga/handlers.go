package saga

import "context"

// The Lambda handlers, one per step, all made by handler: each returns the step's error
// unwrapped (Routable), so the Lambda Go runtime reports it under the name the ASL matches.
// internal/app hands them to lambda.Start (lambdas/<step>/main.go) and to the local Lambda host.

// handler wraps a step as its Lambda handler: the one place the routed error is unwrapped.
func handler[In, Out any](step func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		out, err := step(ctx, in)
		return out, Routable(err)
	}
}

// Handlers returns every step's handler keyed by its function name (claim, authorize,
// confirm, capture, compensate, reconcile), for hosts that register them all.
func (s *Steps) Handlers() map[string]any {
	return map[string]any{
		"claim":      handler(s.Claim),
		"authorize":  handler(s.Authorize),
		"confirm":    handler(s.Confirm),
		"capture":    handler(s.Capture),
		"compensate": handler(s.Compensate),
		"reconcile":  handler(s.Reconcile),
	}
}
