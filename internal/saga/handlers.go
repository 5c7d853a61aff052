package saga

import "context"

// The Lambda handlers, one per step. Each returns the routed error unwrapped (Routable), so
// the Lambda Go runtime reports it under the name the ASL matches. Register them with
// lambda.Start (lambdas/<step>/main.go) or with the local Lambda host.

// ClaimHandler is lambdas/claim's handler.
func (s *Steps) ClaimHandler(ctx context.Context, st State) (Hold, error) {
	out, err := s.Claim(ctx, st)
	return out, Routable(err)
}

// AuthorizeHandler is lambdas/authorize's handler.
func (s *Steps) AuthorizeHandler(ctx context.Context, ev AuthorizeEvent) (AuthorizeResult, error) {
	out, err := s.Authorize(ctx, ev)
	return out, Routable(err)
}

// ConfirmHandler is lambdas/confirm's handler.
func (s *Steps) ConfirmHandler(ctx context.Context, st State) (Confirmation, error) {
	out, err := s.Confirm(ctx, st)
	return out, Routable(err)
}

// CaptureHandler is lambdas/capture's handler.
func (s *Steps) CaptureHandler(ctx context.Context, st State) (CaptureResult, error) {
	out, err := s.Capture(ctx, st)
	return out, Routable(err)
}

// CompensateHandler is lambdas/compensate's handler.
func (s *Steps) CompensateHandler(ctx context.Context, st State) (CompensationResult, error) {
	out, err := s.Compensate(ctx, st)
	return out, Routable(err)
}

// ReconcileHandler is lambdas/reconcile's handler.
func (s *Steps) ReconcileHandler(ctx context.Context, st State) (ReconcileResult, error) {
	out, err := s.Reconcile(ctx, st)
	return out, Routable(err)
}

// Handlers returns every step's handler keyed by its function name (claim, authorize,
// confirm, capture, compensate, reconcile), for hosts that register them all.
func (s *Steps) Handlers() map[string]any {
	return map[string]any{
		"claim":      s.ClaimHandler,
		"authorize":  s.AuthorizeHandler,
		"confirm":    s.ConfirmHandler,
		"capture":    s.CaptureHandler,
		"compensate": s.CompensateHandler,
		"reconcile":  s.ReconcileHandler,
	}
}
