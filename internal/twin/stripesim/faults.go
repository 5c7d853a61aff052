package stripesim

import "time"

// Endpoint names one API operation for fault injection.
type Endpoint string

// The endpoints the simulator serves.
const (
	EndpointCreateIntent   Endpoint = "payment_intents.create"
	EndpointRetrieveIntent Endpoint = "payment_intents.retrieve"
	EndpointConfirmIntent  Endpoint = "payment_intents.confirm"
	EndpointCaptureIntent  Endpoint = "payment_intents.capture"
	EndpointCancelIntent   Endpoint = "payment_intents.cancel"
	EndpointCreateRefund   Endpoint = "refunds.create"
	EndpointRetrieveRefund Endpoint = "refunds.retrieve"
)

// FaultKind is what goes wrong.
type FaultKind string

// Fault kinds.
const (
	// FaultFailBeforeActing answers 500 api_error before the endpoint starts: nothing
	// changes and, as at Stripe, nothing is saved under the idempotency key, so a retry
	// with the same key acts normally.
	FaultFailBeforeActing FaultKind = "fail_before_acting"
	// FaultLoseResponse acts, saves the response under the idempotency key, then holds the
	// connection without answering until the client gives up (its timeout) or
	// Options.LostResponseHold passes, and drops it.
	FaultLoseResponse FaultKind = "lose_response"
	// FaultDropConnection acts, saves the response, then closes the connection at once
	// (the client sees EOF / connection reset).
	FaultDropConnection FaultKind = "drop_connection"
	// FaultRateLimited answers 429 rate_limit before the endpoint starts, as Stripe does to
	// an account past its request rate: like FaultFailBeforeActing, nothing changes and
	// nothing is saved under the idempotency key.
	FaultRateLimited FaultKind = "rate_limited"
	// FaultLatency waits Fault.Latency (real time) before acting, with the idempotency key
	// marked in flight, so a concurrent request with the same key gets 409.
	FaultLatency FaultKind = "latency"
)

// Fault is one injected misbehaviour.
type Fault struct {
	Kind FaultKind
	// Times is how many calls it affects: 0 means 1, negative means every call until
	// ClearFaults.
	Times int
	// Latency is the added delay for FaultLatency.
	Latency time.Duration
	// Until, when set, makes the fault hit every call (Times aside) until that wall time and
	// then vanish: the provider down, or slow, for a window.
	Until time.Time
	// OnInjected, when set, is called each time the fault hits a call, so that a chaos run
	// counts the faults that really hit, not the ones it armed.
	OnInjected func()
}

type activeFault struct {
	Fault
	remaining int
}

// InjectFault arms f for the next calls to ep. Faults of different kinds combine (latency
// then lose the response); each affected call consumes one use of each that reaches it (a
// failure before acting leaves the others for a later call).
func (s *Sim) InjectFault(ep Endpoint, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := f.Times
	if n == 0 {
		n = 1
	}
	s.faults[ep] = append(s.faults[ep], &activeFault{Fault: f, remaining: n})
}

// FailUntil makes every call to ep fail with 500 before acting until the wall time until:
// the provider down for a window. onInjected, when not nil, is called for each call it fails.
func (s *Sim) FailUntil(ep Endpoint, until time.Time, onInjected func()) {
	s.InjectFault(ep, Fault{Kind: FaultFailBeforeActing, Times: -1, Until: until, OnInjected: onInjected})
}

// FailNext makes the next n calls to ep fail with 500 before acting.
func (s *Sim) FailNext(ep Endpoint, n int) {
	s.InjectFault(ep, Fault{Kind: FaultFailBeforeActing, Times: n})
}

// LoseResponseNext makes the next n calls to ep act, then lose their response.
func (s *Sim) LoseResponseNext(ep Endpoint, n int) {
	s.InjectFault(ep, Fault{Kind: FaultLoseResponse, Times: n})
}

// DropConnectionNext makes the next n calls to ep act, then drop the connection.
func (s *Sim) DropConnectionNext(ep Endpoint, n int) {
	s.InjectFault(ep, Fault{Kind: FaultDropConnection, Times: n})
}

// SetLatency delays every call to ep by d until ClearFaults (0 removes it).
func (s *Sim) SetLatency(ep Endpoint, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.latency, ep)
		return
	}
	s.latency[ep] = d
}

// ForgetPaymentMethods makes every payment method unknown while forget is true: a confirm
// answers resource_missing on payment_method, as Stripe does to payment methods created with
// the publishable key of another account or mode. ClearFaults ends it too.
func (s *Sim) ForgetPaymentMethods(forget bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.methodsUnknown = forget
}

// ClearFaults removes every injected fault and latency.
func (s *Sim) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[Endpoint][]*activeFault{}
	s.latency = map[Endpoint]time.Duration{}
	s.methodsUnknown = false
}

// plannedFaults is what one call will suffer.
type plannedFaults struct {
	failBefore  bool
	rateLimited bool
	latency     time.Duration
	lose        FaultKind // "", FaultLoseResponse or FaultDropConnection
}

// takeFaults consumes the faults armed for ep that take effect on one call; must hold s.mu.
// A call answered before acting (a 500, else a 429) reaches none of the others: they stay armed
// for a later call and are not reported, so that a chaos run counts only what hit.
func (s *Sim) takeFaults(ep Endpoint) plannedFaults {
	p := plannedFaults{latency: s.latency[ep]}
	now := time.Now()
	armed := map[FaultKind]bool{}
	for _, f := range s.faults[ep] {
		if f.Until.IsZero() || now.Before(f.Until) {
			armed[f.Kind] = true
		}
	}
	reaches := func(k FaultKind) bool {
		switch {
		case armed[FaultFailBeforeActing]:
			return k == FaultFailBeforeActing
		case armed[FaultRateLimited]:
			return k == FaultRateLimited
		}
		return true
	}
	// One lost response per call: a dropped connection and a held one are the same slot.
	slot := func(k FaultKind) FaultKind {
		if k == FaultDropConnection {
			return FaultLoseResponse
		}
		return k
	}
	used := map[FaultKind]bool{}
	kept := s.faults[ep][:0]
	for _, f := range s.faults[ep] {
		if !f.Until.IsZero() && !now.Before(f.Until) {
			continue // the window is over
		}
		if reaches(f.Kind) && !used[slot(f.Kind)] {
			if f.OnInjected != nil {
				f.OnInjected()
			}
			used[slot(f.Kind)] = true
			switch f.Kind {
			case FaultFailBeforeActing:
				p.failBefore = true
			case FaultRateLimited:
				p.rateLimited = true
			case FaultLatency:
				p.latency += f.Latency
			case FaultLoseResponse, FaultDropConnection:
				p.lose = f.Kind
			}
			if f.remaining > 0 && f.Until.IsZero() {
				f.remaining--
			}
		}
		if f.remaining != 0 {
			kept = append(kept, f)
		}
	}
	s.faults[ep] = kept
	return p
}
