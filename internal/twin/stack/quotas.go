package stack

import (
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

// The AWS quotas the stack applies (Config.Unthrottled and the fields after it): the engine's
// API and state-transition buckets, the Lambda host's account limit and reservations, and the
// API stage's rate and burst. Each is read here, where the stack builds the service.

// stepFunctionsQuotas are the engine's quotas, nil when they are off.
func (st *Stack) stepFunctionsQuotas() *stepfunctions.Quotas {
	if st.cfg.Unthrottled || st.cfg.NoStepFunctionsQuotas {
		return nil
	}
	if st.cfg.StepFunctionsQuotas != nil {
		return st.cfg.StepFunctionsQuotas
	}
	q := stepfunctions.DefaultQuotas()
	return &q
}

// lambdaConcurrency is the Lambda host's account limit (negative: none).
func (st *Stack) lambdaConcurrency() int {
	if st.cfg.Unthrottled {
		return -1
	}
	return st.cfg.LambdaConcurrency
}

// reservedConcurrency is the concurrency a function's spec reserves for it, unless the
// reservations are off.
func (st *Stack) reservedConcurrency(fn deploy.Function) int {
	if st.cfg.Unthrottled || st.cfg.NoReservedConcurrency {
		return 0
	}
	return fn.ReservedConcurrency
}

// apiThrottle is the stage's throttle, nil when it is off. The defaults are the deployed
// stage's (deploy.DefaultAPIRateLimit and DefaultAPIBurstLimit, which infra/stack deploys), so that the twin refuses what the deployed stage
// would. The bucket refills on the stack's clock: under a clock scaled N times the stage
// admits N times its rate per wall second, which a local stack cannot serve for long once N
// passes a few (500 a second at N = 10 is 5,000 requests a wall second), so at such scales only
// a burst of more than the bucket within 1/N of a wall second is still refused.
func (st *Stack) apiThrottle() *throttle.Limit {
	if st.cfg.Unthrottled || st.cfg.NoAPIThrottle {
		return nil
	}
	l := throttle.Limit{Size: deploy.DefaultAPIBurstLimit, RefillPerSecond: deploy.DefaultAPIRateLimit}
	if st.cfg.APIBurstLimit > 0 {
		l.Size = st.cfg.APIBurstLimit
	}
	if st.cfg.APIRateLimit > 0 {
		l.RefillPerSecond = st.cfg.APIRateLimit
	}
	return &l
}

// StepFunctionsThrottles counts, by API action, the engine's calls refused with
// ThrottlingException, and under stepfunctions.StateTransitionQuota the state transitions that
// waited for their bucket (stepfunctions.Server.Throttles).
func (st *Stack) StepFunctionsThrottles() map[string]int64 { return st.sfnServer.Throttles() }
