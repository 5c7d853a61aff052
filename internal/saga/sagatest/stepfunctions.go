package sagatest

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

// Step Functions operation names, as StepFunctions.FailNext, FailAll and Calls take them.
const (
	SFNStartExecution    = "StartExecution"
	SFNDescribeExecution = "DescribeExecution"
	SFNSendTaskSuccess   = "SendTaskSuccess"
	SFNSendTaskFailure   = "SendTaskFailure"
)

// Execution is one execution StepFunctions knows.
type Execution struct {
	ARN, Name, StateMachineARN string
	Input                      string
	Status                     sfntypes.ExecutionStatus
	StartDate                  time.Time
	// Output is a succeeded execution's output, Error a failed one's (see End).
	Output, Error string
}

// TaskAnswer is one SendTaskSuccess or SendTaskFailure call and what it was answered.
type TaskAnswer struct {
	// Op is SFNSendTaskSuccess or SFNSendTaskFailure.
	Op        string
	TaskToken string
	// Output is a success's output; Error and Cause a failure's.
	Output, Error, Cause string
	// Err is what the call was answered; nil when Step Functions accepted it.
	Err error
}

// Accepted reports whether Step Functions took the answer.
func (a TaskAnswer) Accepted() bool { return a.Err == nil }

// StepFunctions is the part of the Step Functions API the product calls, in memory, with AWS's
// rules for Standard workflows: StartExecution names the execution
// {machine ARN with :execution:}:{name}; the same name and input while it runs is the same
// execution (idempotent), any other reuse of the name is ExecutionAlreadyExists;
// DescribeExecution of an unknown ARN is ExecutionDoesNotExist; a task token is answered once,
// and any later answer to it is TaskTimedOut ("the task has already been closed").
//
// Every call is counted (Calls); every task answer is recorded with what it was told
// (Answers), refused ones included. Errors injected with FailNext and FailAll are answered
// before the call acts.
type StepFunctions struct {
	// BeforeStart, when set, runs at the start of every StartExecution, outside the lock (a
	// concurrent request starting the same execution first calls PutExecution from it).
	BeforeStart func(in *sfn.StartExecutionInput)
	// Now dates new executions; time.Now when nil.
	Now func() time.Time

	mu         sync.Mutex
	executions map[string]*Execution
	started    int
	calls      map[string]int
	answers    []TaskAnswer
	closed     map[string]bool
	next       map[string][]error
	always     map[string]error
}

// NewStepFunctions returns a Step Functions API with no executions.
func NewStepFunctions() *StepFunctions {
	return &StepFunctions{executions: map[string]*Execution{}, calls: map[string]int{}, closed: map[string]bool{},
		next: map[string][]error{}, always: map[string]error{}}
}

// ExecutionARN is the ARN Step Functions gives the execution named name of the state machine.
func ExecutionARN(stateMachineARN, name string) string {
	return strings.Replace(stateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + name
}

// FailNext queues errors for op (an SFN* name), answered one per call, in turn, before the call
// acts; the calls after them behave normally.
func (f *StepFunctions) FailNext(op string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next[op] = append(f.next[op], errs...)
}

// FailAll makes every call of op answer err before it acts, until FailAll(op, nil).
func (f *StepFunctions) FailAll(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.always, op)
		return
	}
	f.always[op] = err
}

// injected counts a call of op and returns the error it must answer, if any. f.mu is held.
func (f *StepFunctions) injected(op string) error {
	f.calls[op]++
	if q := f.next[op]; len(q) > 0 {
		f.next[op] = q[1:]
		return q[0]
	}
	return f.always[op]
}

func (f *StepFunctions) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// PutExecution records an execution as if it had been started (or had run) elsewhere; it
// replaces any execution with the same ARN. Its name is the ARN's last segment.
func (f *StepFunctions) PutExecution(arn, input string, status sfntypes.ExecutionStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := arn[strings.LastIndex(arn, ":")+1:]
	machine := strings.Replace(strings.TrimSuffix(arn, ":"+name), ":execution:", ":stateMachine:", 1)
	f.executions[arn] = &Execution{ARN: arn, Name: name, StateMachineARN: machine, Input: input, Status: status, StartDate: f.now()}
}

// SetStatus changes a known execution's status (it ended, or was stopped); it reports whether
// the execution exists.
func (f *StepFunctions) SetStatus(arn string, status sfntypes.ExecutionStatus) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ex, ok := f.executions[arn]
	if ok {
		ex.Status = status
	}
	return ok
}

// End ends a known execution as the state machine would: SUCCEEDED with output (a business
// ending's verdict, or Confirmed's state), or another status with errorName; it reports whether
// the execution exists.
func (f *StepFunctions) End(arn string, status sfntypes.ExecutionStatus, output, errorName string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ex, ok := f.executions[arn]
	if ok {
		ex.Status, ex.Output, ex.Error = status, output, errorName
	}
	return ok
}

// Execution returns the execution with the ARN.
func (f *StepFunctions) Execution(arn string) (Execution, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ex, ok := f.executions[arn]
	if !ok {
		return Execution{}, false
	}
	return *ex, true
}

// Started counts the executions StartExecution created (not the idempotent repeats, not
// PutExecution's).
func (f *StepFunctions) Started() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started
}

// Calls counts the calls of op, answered or refused.
func (f *StepFunctions) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Answers returns every SendTaskSuccess and SendTaskFailure call, in order, refused ones
// included.
func (f *StepFunctions) Answers() []TaskAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]TaskAnswer(nil), f.answers...)
}

// Successes returns the SendTaskSuccess calls Step Functions accepted, in order.
func (f *StepFunctions) Successes() []TaskAnswer { return f.accepted(SFNSendTaskSuccess) }

// Failures returns the SendTaskFailure calls Step Functions accepted, in order.
func (f *StepFunctions) Failures() []TaskAnswer { return f.accepted(SFNSendTaskFailure) }

func (f *StepFunctions) accepted(op string) []TaskAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []TaskAnswer
	for _, a := range f.answers {
		if a.Op == op && a.Accepted() {
			out = append(out, a)
		}
	}
	return out
}

// StartExecution starts an execution named in.Name, as a Standard workflow does.
func (f *StepFunctions) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	if f.BeforeStart != nil {
		f.BeforeStart(in)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(SFNStartExecution); err != nil {
		return nil, err
	}
	input := aws.ToString(in.Input)
	if in.Input == nil {
		input = "{}"
	}
	arn := ExecutionARN(aws.ToString(in.StateMachineArn), aws.ToString(in.Name))
	if ex, ok := f.executions[arn]; ok {
		if ex.Status == sfntypes.ExecutionStatusRunning && ex.Input == input {
			start := ex.StartDate
			return &sfn.StartExecutionOutput{ExecutionArn: aws.String(arn), StartDate: &start}, nil
		}
		return nil, &sfntypes.ExecutionAlreadyExists{Message: aws.String("Execution Already Exists: '" + arn + "'")}
	}
	f.started++
	ex := &Execution{ARN: arn, Name: aws.ToString(in.Name), StateMachineARN: aws.ToString(in.StateMachineArn), Input: input,
		Status: sfntypes.ExecutionStatusRunning, StartDate: f.now()}
	f.executions[arn] = ex
	start := ex.StartDate
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String(arn), StartDate: &start}, nil
}

// DescribeExecution describes a known execution; ExecutionDoesNotExist otherwise.
func (f *StepFunctions) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(SFNDescribeExecution); err != nil {
		return nil, err
	}
	arn := aws.ToString(in.ExecutionArn)
	ex, ok := f.executions[arn]
	if !ok {
		return nil, &sfntypes.ExecutionDoesNotExist{Message: aws.String("Execution Does Not Exist: '" + arn + "'")}
	}
	start := ex.StartDate
	out := &sfn.DescribeExecutionOutput{ExecutionArn: aws.String(ex.ARN), Name: aws.String(ex.Name),
		StateMachineArn: aws.String(ex.StateMachineARN), Input: aws.String(ex.Input), Status: ex.Status, StartDate: &start}
	if ex.Output != "" {
		out.Output = aws.String(ex.Output)
	}
	if ex.Error != "" {
		out.Error = aws.String(ex.Error)
	}
	return out, nil
}

// SendTaskSuccess answers a task token with success.
func (f *StepFunctions) SendTaskSuccess(_ context.Context, in *sfn.SendTaskSuccessInput, _ ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	a := TaskAnswer{Op: SFNSendTaskSuccess, TaskToken: aws.ToString(in.TaskToken), Output: aws.ToString(in.Output)}
	if err := f.answer(a); err != nil {
		return nil, err
	}
	return &sfn.SendTaskSuccessOutput{}, nil
}

// SendTaskFailure answers a task token with an error.
func (f *StepFunctions) SendTaskFailure(_ context.Context, in *sfn.SendTaskFailureInput, _ ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	a := TaskAnswer{Op: SFNSendTaskFailure, TaskToken: aws.ToString(in.TaskToken), Error: aws.ToString(in.Error), Cause: aws.ToString(in.Cause)}
	if err := f.answer(a); err != nil {
		return nil, err
	}
	return &sfn.SendTaskFailureOutput{}, nil
}

// answer records a task answer and closes its token, or refuses it.
func (f *StepFunctions) answer(a TaskAnswer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	a.Err = f.injected(a.Op)
	if a.Err == nil && f.closed[a.TaskToken] {
		a.Err = &sfntypes.TaskTimedOut{Message: aws.String("Task Timed Out: 'Provided task does not exist anymore'")}
	}
	if a.Err == nil {
		f.closed[a.TaskToken] = true
	}
	f.answers = append(f.answers, a)
	return a.Err
}
