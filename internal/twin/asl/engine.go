package asl

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
)

// Execution statuses, as the Step Functions API names them.
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
	StatusTimedOut  = "TIMED_OUT"
	StatusAborted   = "ABORTED"
)

// Errors returned by the task-token operations.
var (
	ErrTaskDoesNotExist = errors.New("TaskDoesNotExist")
	ErrTaskTimedOut     = errors.New("TaskTimedOut")
	ErrInvalidToken     = errors.New("InvalidToken")
	ErrInvalidOutput    = errors.New("InvalidOutput")
)

// Options configures an Engine.
type Options struct {
	Clock   clock.Clock // default clock.Real{}
	Invoker Invoker     // Lambda invocations; required for Lambda tasks that are not mocked
	Mocker  TaskMocker  // optional; consulted for executions started with a test case
	Region  string      // for history event details; default us-east-1
	Logger  *slog.Logger
	// Jitter returns a number in [0,1) for FULL jitter; default math/rand/v2.
	Jitter func() float64
	// OnFinish, when set, is called once per execution as it closes, its status and stop
	// time final and before Done is closed: what a service publishes per closed execution
	// (metrics) hooks in here, at no cost per state transition.
	OnFinish func(*Execution)
	// BeforeTransition, when set, is called before every state transition (a state entered,
	// or an attempt retried, as Step Functions counts them) with the execution's context, and
	// waited on: Step Functions' state-transition throttle hooks in here, delaying transitions
	// rather than failing them. An error, which it returns only when the context ended, aborts
	// the run as a stop does.
	BeforeTransition func(context.Context) error
}

// Engine runs executions of parsed state machines.
type Engine struct {
	clock   clock.Clock
	invoker Invoker
	mocker  TaskMocker
	region  string
	// regionValue is region as an event detail, boxed once.
	regionValue any
	log         *slog.Logger
	jitter      func() float64
	// onFinish is Options.OnFinish.
	onFinish func(*Execution)
	// beforeTransition is Options.BeforeTransition.
	beforeTransition func(context.Context) error

	tokMu    sync.Mutex
	tokens   map[string]*tokenWait
	finished map[string]error // tokens no longer waiting: why (ErrTaskTimedOut or ErrTaskDoesNotExist)
	// machines names the state machine of every token open or remembered as finished: the
	// resource Step Functions authorizes SendTask* on.
	machines map[string]string
	// finishedOrder lists finished tokens oldest first, to bound the map.
	finishedOrder []string
}

// NewEngine returns an engine.
func NewEngine(o Options) *Engine {
	e := &Engine{clock: o.Clock, invoker: o.Invoker, mocker: o.Mocker, region: o.Region, log: o.Logger, jitter: o.Jitter,
		tokens: map[string]*tokenWait{}, finished: map[string]error{}, machines: map[string]string{}, onFinish: o.OnFinish,
		beforeTransition: o.BeforeTransition}
	if e.clock == nil {
		e.clock = clock.Real{}
	}
	if e.region == "" {
		e.region = "us-east-1"
	}
	e.regionValue = e.region
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.jitter == nil {
		e.jitter = mrand.Float64
	}
	return e
}

// logsInfo reports whether the logger records Info messages: asked first, so that a
// discarded message costs no argument list.
func (e *Engine) logsInfo() bool { return e.log.Enabled(context.Background(), slog.LevelInfo) }

// Clock returns the engine's clock.
func (e *Engine) Clock() clock.Clock { return e.clock }

// ExecutionSpec names a new execution.
type ExecutionSpec struct {
	ARN              string
	Name             string
	StateMachineARN  string
	StateMachineName string
	RoleARN          string
	TestCase         string // Step Functions Local test case; selects mocked responses
	Input            []byte // JSON; empty means {}
}

// Execution is one run of a state machine.
type Execution struct {
	ExecutionSpec
	StartDate time.Time

	engine *Engine
	sm     *StateMachine
	input  any
	// ctxExe and ctxSM are $$.Execution and $$.StateMachine, built by contextMaps on first
	// use (most state machines never read the context object), or given before the run.
	ctxExe  map[string]any
	ctxSM   map[string]any
	ctxOnce sync.Once
	ctx     context.Context
	cancel  context.CancelCauseFunc
	done    chan struct{}

	transitions  atomic.Int64
	timeoutTimer clock.Timer // execution TimeoutSeconds
	// main is the execution's own thread, kept here to save allocating it.
	main thread
	// eventsBuf holds the first events, kept here to save allocating them.
	eventsBuf [initialEvents]event

	mu       sync.Mutex
	status   string
	stopDate time.Time
	output   []byte
	errName  string
	cause    string
	events   []event
	// eventMaps are the events' details as the API's maps, made when the history is first read.
	eventMaps  []map[string]any
	mockCounts map[string]int
}

// HistoryEvent is one entry of an execution's history, in the API's terms.
type HistoryEvent struct {
	ID              int64
	PreviousEventID int64
	Timestamp       time.Time
	Type            string
	DetailsKey      string // e.g. "taskScheduledEventDetails"; empty when there are none
	Details         map[string]any
}

// Snapshot is an execution's observable state.
type Snapshot struct {
	Status   string
	Start    time.Time
	Stop     time.Time
	Output   []byte
	Error    string
	Cause    string
	Input    []byte
	Spec     ExecutionSpec
	Machine  *StateMachine
	Transits int64
}

type abortCause struct{ errName, cause string }

func (a *abortCause) Error() string { return "execution aborted" }

var errExecutionTimedOut = errors.New("execution timed out")

// Start validates the input and starts the execution in the background.
func (e *Engine) Start(sm *StateMachine, spec ExecutionSpec) (*Execution, error) {
	if len(spec.Input) == 0 {
		spec.Input = []byte("{}")
	}
	input, err := parseData(spec.Input)
	if err != nil {
		return nil, fmt.Errorf("%w: input is not valid JSON: %v", ErrInvalidInput, err)
	}
	if len(spec.Input) > PayloadLimit {
		return nil, fmt.Errorf("%w: input exceeds %d bytes", ErrInvalidInput, PayloadLimit)
	}
	now := e.clock.Now()
	x := &Execution{ExecutionSpec: spec, StartDate: now, engine: e, sm: sm, input: input,
		done: make(chan struct{}), status: StatusRunning}
	x.events = x.eventsBuf[:0]
	x.ctx, x.cancel = context.WithCancelCause(context.Background())
	goRun(x)
	return x, nil
}

// contextMaps returns $$.Execution and $$.StateMachine, building those not given on first use.
func (x *Execution) contextMaps() (exe, sm map[string]any) {
	x.ctxOnce.Do(func() {
		if x.ctxExe == nil {
			x.ctxExe = map[string]any{"Id": x.ARN, "Input": x.input, "Name": x.Name, "RoleArn": x.RoleARN,
				"StartTime": isoTime(x.StartDate), "RedriveCount": int64(0)}
		}
		if x.ctxSM == nil {
			x.ctxSM = map[string]any{"Id": x.StateMachineARN, "Name": x.StateMachineName}
		}
	})
	return x.ctxExe, x.ctxSM
}

// initialEvents is the history capacity an execution starts with: a one-task execution's
// events, so that short executions grow their history without copying it.
const initialEvents = 8

// ErrInvalidInput reports execution input that is not acceptable JSON.
var ErrInvalidInput = errors.New("InvalidExecutionInput")

// Done is closed when the execution has finished.
func (x *Execution) Done() <-chan struct{} { return x.done }

// Wait blocks until the execution finishes or ctx is done.
func (x *Execution) Wait(ctx context.Context) error {
	select {
	case <-x.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop aborts a running execution; it reports false when it had already finished.
func (x *Execution) Stop(errName, cause string) bool {
	x.mu.Lock()
	running := x.status == StatusRunning
	x.mu.Unlock()
	if !running {
		return false
	}
	x.cancel(&abortCause{errName, cause})
	// Every wait in the interpreter selects on the execution's context, so the
	// run loop ends promptly; the bound only guards against a task function
	// that ignores cancellation.
	select {
	case <-x.done:
	case <-time.After(5 * time.Second):
	}
	return true
}

// StateTransitions counts the states entered so far (AWS bills Standard
// workflows per state transition).
func (x *Execution) StateTransitions() int64 { return x.transitions.Load() }

// Snapshot returns the execution's current state.
func (x *Execution) Snapshot() Snapshot {
	x.mu.Lock()
	defer x.mu.Unlock()
	return Snapshot{Status: x.status, Start: x.StartDate, Stop: x.stopDate, Output: x.output, Error: x.errName,
		Cause: x.cause, Input: x.Input, Spec: x.ExecutionSpec, Machine: x.sm, Transits: x.transitions.Load()}
}

// History returns a copy of the execution's events in order.
func (x *Execution) History() []HistoryEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.historyLocked()
}

// addEvent records an event that happens now with details of its kind's shape.
func (x *Execution) addEvent(prev int64, k *eventKind, d details) int64 {
	return x.addEventAt(x.engine.clock.Now(), prev, k, d)
}

// addEventAt records an event that happened at now; its id is its place in the history.
func (x *Execution) addEventAt(now time.Time, prev int64, k *eventKind, d details) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.events = append(x.events, event{at: now, kind: k, prev: prev, details: d})
	return int64(len(x.events))
}

func (x *Execution) nextMockAttempt(state string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mockCounts == nil {
		x.mockCounts = map[string]int{}
	}
	n := x.mockCounts[state]
	x.mockCounts[state] = n + 1
	return n
}

func (x *Execution) run() {
	x.main = thread{x: x, ctx: x.ctx, top: true}
	t := &x.main
	// The execution started when its start date says it did: one clock reading serves both.
	t.eventAt(x.StartDate, kindExecutionStarted, details{s: [3]string{x.RoleARN}})
	if x.sm.TimeoutSeconds > 0 {
		x.timeoutTimer = x.engine.clock.AfterFunc(time.Duration(x.sm.TimeoutSeconds)*time.Second, func() { x.cancel(errExecutionTimedOut) })
	}
	if x.engine.logsInfo() {
		x.engine.log.Info("execution started", "execution", x.ARN, "stateMachine", x.StateMachineARN, "testCase", x.TestCase)
	}
	t.execInput = true
	out, serr := t.runBlock(x.sm.root, x.input)
	x.afterRun(t, out, serr)
}

// afterRun finishes the execution, or parks it when its top-level thread is
// waiting on a task token: then no goroutine remains, and a callback (token
// completion, timer, stop) resumes it on a new one.
func (x *Execution) afterRun(t *thread, out any, serr *StateError) {
	for serr == errSuspended {
		p := t.susp
		t.susp = nil
		o, parked := x.park(p)
		if parked {
			return
		}
		out, serr = t.resume(p, o)
	}
	x.finish(t, out, serr)
}

func (x *Execution) finish(t *thread, out any, serr *StateError) {
	defer close(x.done)
	defer x.cancel(nil)
	if x.timeoutTimer != nil {
		x.timeoutTimer.Stop()
	}
	status, errName, cause := StatusSucceeded, "", ""
	var output []byte
	// The execution stopped when its closing event says it did: one clock reading serves both.
	now := x.engine.clock.Now()
	if cerr := context.Cause(x.ctx); cerr != nil && x.ctx.Err() != nil {
		var ab *abortCause
		switch {
		case errors.As(cerr, &ab):
			status, errName, cause = StatusAborted, ab.errName, ab.cause
			t.eventAt(now, kindExecutionAborted, errorDetails(errName, cause))
		case errors.Is(cerr, errExecutionTimedOut):
			status, errName, cause = StatusTimedOut, ErrTimeout, fmt.Sprintf("The execution exceeded its TimeoutSeconds of %d", x.sm.TimeoutSeconds)
			t.eventAt(now, kindExecutionTimedOut, errorDetails(errName, cause))
		}
	}
	if status == StatusSucceeded {
		if serr == nil {
			// The thread's last state rendered its output, which is the execution's.
			if t.outJSON != "" {
				output = []byte(t.outJSON)
			} else {
				output = marshalData(out)
			}
			if len(output) > PayloadLimit {
				serr = &StateError{Name: ErrDataLimitExceeded, Cause: "The execution output exceeds the payload size limit"}
				output = nil
			}
		}
		if serr != nil {
			status, errName, cause = StatusFailed, serr.Name, serr.Cause
			t.eventAt(now, kindExecutionFailed, errorDetails(errName, cause))
		} else {
			outString := t.outJSON
			if outString == "" {
				outString = string(output)
			}
			t.eventAt(now, kindExecutionSucceeded, outputDetails(outString))
		}
	}
	x.mu.Lock()
	x.status, x.output, x.errName, x.cause, x.stopDate = status, output, errName, cause, now
	x.mu.Unlock()
	if x.engine.logsInfo() {
		x.engine.log.Info("execution finished", "execution", x.ARN, "status", status, "error", errName,
			"stateTransitions", x.transitions.Load())
	}
	if x.engine.onFinish != nil {
		x.engine.onFinish(x)
	}
}

// park arms the callbacks that resume a suspended execution: the token's
// completion, the task's timeout and heartbeat timers, and the execution's
// cancellation (stop or execution timeout). It reports false, with the
// outcome, when the task already completed and the caller should go on.
func (x *Execution) park(p *suspension) (outcome, bool) {
	e, tw := x.engine, p.tw
	var fired atomic.Bool
	var armMu sync.Mutex // held while arming, so cleanup sees every hook
	var timer clock.Timer
	var stopCtx func() bool
	wake := func(o outcome) {
		if !fired.CompareAndSwap(false, true) {
			return
		}
		goRun(funcJob(func() {
			armMu.Lock()
			if timer != nil {
				timer.Stop()
			}
			if stopCtx != nil {
				stopCtx()
			}
			armMu.Unlock()
			tw.stopHeartbeat()
			out, serr := p.t.resume(p, o)
			x.afterRun(p.t, out, serr)
		}))
	}
	// expire ends the wait with o unless a SendTask* call already took the token.
	expire := func(o outcome, why error) {
		e.tokMu.Lock()
		if e.tokens[p.token] != tw {
			e.tokMu.Unlock()
			return
		}
		e.retire(p.token, why)
		e.tokMu.Unlock()
		wake(o)
	}

	armMu.Lock()
	defer armMu.Unlock()
	e.tokMu.Lock()
	if e.tokens[p.token] != tw {
		// Completed while the task was being submitted: its outcome is (or is
		// about to be) in the channel.
		e.tokMu.Unlock()
		return <-tw.result, false
	}
	tw.wake = wake
	e.tokMu.Unlock()

	if !p.deadline.IsZero() {
		timer = e.clock.AfterFunc(p.deadline.Sub(e.clock.Now()), func() { expire(timeoutOutcome(), ErrTaskTimedOut) })
	}
	tw.hbMu.Lock()
	tw.hbEvery = time.Duration(p.heartbeat) * time.Second
	tw.onMissed = func() { expire(heartbeatOutcome(), ErrTaskTimedOut) }
	tw.hbMu.Unlock()
	tw.armHeartbeat(e.clock)
	stopCtx = context.AfterFunc(x.ctx, func() { wake(outcome{err: &StateError{Name: "States.Aborted", Cause: "execution stopped"}}) })
	return outcome{}, true
}

// tokenWait is a task parked on .waitForTaskToken: an entry in a map, not a
// polling loop.
type tokenWait struct {
	result chan outcome // buffered 1
	x      *Execution

	// The heartbeat timer is re-armed synchronously by SendTaskHeartbeat, so
	// that a heartbeat acknowledged to the caller has taken effect.
	hbMu    sync.Mutex
	hbEvery time.Duration
	hbTimer clock.Timer
	hbGen   int

	// wake is set while the execution is parked without a goroutine:
	// completion calls it instead of sending on result.
	wake func(outcome) // guarded by Engine.tokMu
	// onMissed handles a missed heartbeat.
	onMissed func() // guarded by hbMu
}

// armHeartbeat (re)starts the heartbeat timer; a timer that fires after being
// replaced is ignored by generation.
func (tw *tokenWait) armHeartbeat(clk clock.Clock) {
	tw.hbMu.Lock()
	defer tw.hbMu.Unlock()
	if tw.hbEvery <= 0 {
		return
	}
	if tw.hbTimer != nil {
		tw.hbTimer.Stop()
	}
	tw.hbGen++
	gen := tw.hbGen
	tw.hbTimer = clk.AfterFunc(tw.hbEvery, func() {
		tw.hbMu.Lock()
		current := gen == tw.hbGen
		onMissed := tw.onMissed
		tw.hbMu.Unlock()
		if current && onMissed != nil {
			onMissed()
		}
	})
}

func (tw *tokenWait) stopHeartbeat() {
	tw.hbMu.Lock()
	defer tw.hbMu.Unlock()
	tw.hbGen++
	if tw.hbTimer != nil {
		tw.hbTimer.Stop()
		tw.hbTimer = nil
	}
}

type outcome struct {
	out any
	err *StateError
	// outJSON is out's JSON when the text it was parsed from told it (parseDataJSON), else empty.
	outJSON string
}

func (e *Engine) newToken(x *Execution) (string, *tokenWait) {
	var b [48]byte
	b[0] = tokenVersion
	_, _ = rand.Read(b[1:])
	tok := base64.StdEncoding.EncodeToString(b[:])
	tw := &tokenWait{result: make(chan outcome, 1), x: x}
	e.tokMu.Lock()
	e.tokens[tok] = tw
	e.machines[tok] = x.StateMachineARN
	e.tokMu.Unlock()
	return tok, tw
}

const tokenVersion = 0xA5

// finishedTokenLimit bounds the memory of closed tokens; an older token is
// forgotten and reported as TaskDoesNotExist rather than TaskTimedOut.
const finishedTokenLimit = 100_000

// retire closes a token and remembers why; the caller holds tokMu.
func (e *Engine) retire(tok string, why error) {
	delete(e.tokens, tok)
	if _, known := e.finished[tok]; !known {
		e.finishedOrder = append(e.finishedOrder, tok)
		if len(e.finishedOrder) > finishedTokenLimit {
			delete(e.finished, e.finishedOrder[0])
			delete(e.machines, e.finishedOrder[0])
			e.finishedOrder = e.finishedOrder[1:]
		}
	}
	e.finished[tok] = why
}

func (e *Engine) closeToken(tok string, why error) {
	e.tokMu.Lock()
	e.retire(tok, why)
	e.tokMu.Unlock()
}

// closeTokenIfOpen closes a token that is still waiting, keeping the reason
// recorded by whoever closed it first.
func (e *Engine) closeTokenIfOpen(tok string, why error) {
	e.tokMu.Lock()
	defer e.tokMu.Unlock()
	if _, ok := e.tokens[tok]; ok {
		e.retire(tok, why)
	}
}

func (e *Engine) lookupToken(tok string) (*tokenWait, error) {
	b, err := base64.StdEncoding.DecodeString(tok)
	if err != nil || len(b) != 48 || b[0] != tokenVersion {
		return nil, ErrInvalidToken
	}
	e.tokMu.Lock()
	defer e.tokMu.Unlock()
	if tw, ok := e.tokens[tok]; ok {
		return tw, nil
	}
	if why, ok := e.finished[tok]; ok {
		return nil, why
	}
	return nil, ErrTaskDoesNotExist
}

// TokenStateMachine returns the ARN of the state machine whose execution issued token, for a
// token still waiting or remembered as finished.
func (e *Engine) TokenStateMachine(token string) (string, bool) {
	e.tokMu.Lock()
	defer e.tokMu.Unlock()
	arn, ok := e.machines[token]
	return arn, ok
}

// SendTaskSuccess completes the task waiting on token with output (JSON).
func (e *Engine) SendTaskSuccess(token string, output []byte) error {
	tw, err := e.lookupToken(token)
	if err != nil {
		return err
	}
	v, js, perr := parseDataJSON(output)
	if perr != nil || len(output) == 0 {
		return fmt.Errorf("%w: the output is not valid JSON", ErrInvalidOutput)
	}
	return e.complete(token, tw, outcome{out: v, outJSON: js})
}

// SendTaskFailure fails the task waiting on token.
func (e *Engine) SendTaskFailure(token, errName, cause string) error {
	tw, err := e.lookupToken(token)
	if err != nil {
		return err
	}
	return e.complete(token, tw, outcome{err: &StateError{Name: errName, Cause: cause}})
}

func (e *Engine) complete(token string, tw *tokenWait, o outcome) error {
	e.tokMu.Lock()
	if e.tokens[token] != tw {
		why := e.finished[token]
		e.tokMu.Unlock()
		if why == nil {
			why = ErrTaskDoesNotExist
		}
		return why
	}
	e.retire(token, ErrTaskDoesNotExist)
	wake := tw.wake
	e.tokMu.Unlock()
	if wake != nil {
		wake(o)
	} else {
		tw.result <- o
	}
	return nil
}

// SendTaskHeartbeat resets the heartbeat timer of the task waiting on token.
func (e *Engine) SendTaskHeartbeat(token string) error {
	tw, err := e.lookupToken(token)
	if err != nil {
		return err
	}
	tw.armHeartbeat(e.clock)
	return nil
}

// WaitingTasks returns how many tasks are parked on task tokens.
func (e *Engine) WaitingTasks() int {
	e.tokMu.Lock()
	defer e.tokMu.Unlock()
	return len(e.tokens)
}

// isoTime renders t as the context object's timestamps: UTC, milliseconds truncated. Years of
// four digits are written directly, a cost paid per state transition; others go to Format.
func isoTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format("2006-01-02T15:04:05.000Z")
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / int(time.Millisecond)
	var b [24]byte
	put := func(i, v, digits int) {
		for j := i + digits - 1; j >= i; j-- {
			b[j] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, minute, 2)
	b[16] = ':'
	put(17, sec, 2)
	b[19] = '.'
	put(20, ms, 3)
	b[23] = 'Z'
	return string(b[:])
}
