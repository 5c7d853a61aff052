package lambdahost

import (
	"sync"
)

// Lambda's concurrency model, as the host applies it
// (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html): the account has a
// concurrency limit (Options.MaxConcurrency, AWS's default 1,000 per Region), the invocations in
// flight across all its functions. A function with reserved concurrency has that many slots to
// itself, carved out of the account's: it never runs more at once, and it never competes for
// the rest. Every other function shares the unreserved pool, the account's limit minus every
// reservation. A synchronous invocation that finds its pool full is refused at once with 429
// TooManyRequestsException, its Reason naming the pool: ReservedFunctionConcurrentInvocationLimitExceeded
// for a reservation, ConcurrentInvocationLimitExceeded for the unreserved pool. An asynchronous
// one waits in Lambda's queue for a slot.
//
// AWS also refuses a reservation that would leave fewer than 100 slots unreserved
// (https://docs.aws.amazon.com/lambda/latest/api/API_PutFunctionConcurrency.html); the host
// only warns, so that tests can model an account of a handful of slots.
const minUnreserved = 100

// Throttle reasons, as Lambda names them in a TooManyRequestsException.
const (
	ReasonReserved   = "ReservedFunctionConcurrentInvocationLimitExceeded"
	ReasonUnreserved = "ConcurrentInvocationLimitExceeded"
)

// pool is a number of concurrency slots; its methods are safe for concurrent use.
type pool struct {
	// reason is what a refusal from this pool says.
	reason string

	mu    sync.Mutex
	freed *sync.Cond
	size  int // negative: unlimited
	inUse int
}

func newPool(size int, reason string) *pool {
	p := &pool{size: size, reason: reason}
	p.freed = sync.NewCond(&p.mu)
	return p
}

// tryAcquire takes a slot if one is free: Lambda throttles rather than queues synchronous
// invocations.
func (p *pool) tryAcquire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.size >= 0 && p.inUse >= p.size {
		return false
	}
	p.inUse++
	return true
}

// acquire takes a slot, waiting for one: asynchronous invocations queue.
func (p *pool) acquire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.size >= 0 && p.inUse >= p.size {
		p.freed.Wait()
	}
	p.inUse++
}

func (p *pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inUse--
	p.freed.Signal()
}

// resize changes how many slots the pool has; invocations in flight keep theirs, and a pool
// shrunk below them admits none until enough have finished.
func (p *pool) resize(size int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.size = size
	p.freed.Broadcast()
}

func (p *pool) limit() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size
}

// carve gives f its pool, its own when cfg reserves concurrency and the unreserved pool
// otherwise, and sizes the unreserved pool to what the account's limit leaves once every
// registered function's reservation is taken out. h.mu is held; f replaces any function of
// its name.
func (h *Host) carve(f *function, reserved int) {
	f.reserved = reserved
	if reserved > 0 {
		f.pool = newPool(reserved, ReasonReserved)
	} else {
		f.pool = h.unreserved
	}
	h.functions[f.name] = f
	if h.opts.MaxConcurrency < 0 {
		return
	}
	total := 0
	for _, g := range h.functions {
		total += g.reserved
	}
	left := max(h.opts.MaxConcurrency-total, 0)
	if h.opts.MaxConcurrency >= minUnreserved && left < minUnreserved {
		h.log.Warn("lambdahost: reservations leave fewer unreserved slots than AWS allows",
			"accountLimit", h.opts.MaxConcurrency, "reserved", total, "unreserved", left, "awsMinimum", minUnreserved)
	}
	h.unreserved.resize(left)
}

// UnreservedConcurrency is the size of the pool the functions without reserved concurrency
// share: the account's limit less every reservation (negative when the account has no limit).
func (h *Host) UnreservedConcurrency() int { return h.unreserved.limit() }
