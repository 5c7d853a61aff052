package asl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Invoker invokes Lambda functions synchronously (RequestResponse).
//
// A function error (the function ran and reported an error) comes back as
// fnErr; a failure to invoke at all (throttling, missing function, network)
// as err, preferably a *TaskError naming it as Step Functions would
// ("Lambda.ServiceException", "Lambda.TooManyRequestsException", ...).
type Invoker interface {
	Invoke(ctx context.Context, functionName string, payload []byte) (result []byte, fnErr *FunctionError, err error)
}

// FunctionError is an error reported by a Lambda function: the errorType and
// errorMessage of its error payload.
type FunctionError struct {
	Type    string
	Message string
	// Payload is the raw error payload, when the invoker has it; Step Functions
	// reports it as the error's cause.
	Payload []byte
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// cause renders the error as Step Functions reports a Lambda function error's cause.
func (e *FunctionError) cause() string {
	if len(e.Payload) > 0 {
		return string(e.Payload)
	}
	b, _ := json.Marshal(map[string]any{"errorMessage": e.Message, "errorType": e.Type})
	return string(b)
}

// TaskError is an invocation failure with the name Step Functions gives it.
type TaskError struct {
	Name  string
	Cause string
}

func (e *TaskError) Error() string { return e.Name + ": " + e.Cause }

// TaskMocker supplies mocked task results for a test case, as Step Functions
// Local's MockConfigFile does. attempt counts the invocations of the state
// within one execution from 0 (retries and re-entries included). ok is false
// when the state is not mocked in that test case; otherwise either output
// (the service response, before ResultSelector) or errName/cause is set.
type TaskMocker interface {
	Mock(stateMachineName, testCase, stateName string, attempt int) (output json.RawMessage, errName, cause string, ok bool)
}

// Func is an in-process Lambda handler: JSON in, JSON out.
type Func func(ctx context.Context, payload []byte) ([]byte, error)

// FuncInvoker invokes in-process functions by name, for tests and benchmarks.
// A function's error becomes a function error named after its Go type, as the
// Lambda Go runtime names errors, unless it is (or wraps) a *FunctionError.
type FuncInvoker struct {
	mu    sync.RWMutex
	funcs map[string]Func
}

// NewFuncInvoker returns an invoker over the given functions.
func NewFuncInvoker(funcs map[string]Func) *FuncInvoker {
	fi := &FuncInvoker{funcs: map[string]Func{}}
	for n, f := range funcs {
		fi.funcs[n] = f
	}
	return fi
}

// Register adds or replaces a function.
func (fi *FuncInvoker) Register(name string, f Func) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	fi.funcs[name] = f
}

// Invoke runs the named function; the name may be a function ARN.
func (fi *FuncInvoker) Invoke(ctx context.Context, functionName string, payload []byte) ([]byte, *FunctionError, error) {
	name := FunctionNameFromARN(functionName)
	fi.mu.RLock()
	f, ok := fi.funcs[name]
	fi.mu.RUnlock()
	if !ok {
		return nil, nil, &TaskError{Name: "Lambda.ResourceNotFoundException", Cause: fmt.Sprintf("Function not found: %s", functionName)}
	}
	out, err := callRecovering(ctx, f, payload)
	if err != nil {
		var fe *FunctionError
		if errors.As(err, &fe) {
			return nil, fe, nil
		}
		return nil, &FunctionError{Type: ErrorTypeName(err), Message: err.Error()}, nil
	}
	if len(out) == 0 {
		out = []byte("null")
	}
	return out, nil, nil
}

// callRecovering turns a panicking function into a function error, as the
// Lambda runtime reports a handler panic instead of crashing the caller.
func callRecovering(ctx context.Context, f Func, payload []byte) (out []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &FunctionError{Type: "Runtime.Panic", Message: fmt.Sprint(v)}
		}
	}()
	return f(ctx, payload)
}

// ErrorTypeName names an error the way the Lambda Go runtime does: the name
// of its (pointed-to) type.
func ErrorTypeName(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// FunctionNameFromARN returns the function name from a function ARN
// ("arn:aws:lambda:region:account:function:name[:qualifier]"), or its argument.
func FunctionNameFromARN(s string) string {
	if !strings.HasPrefix(s, "arn:") {
		if i := strings.IndexByte(s, ':'); i >= 0 {
			return s[:i]
		}
		return s
	}
	// Fields are cut off one at a time rather than split into a slice: this runs per invocation.
	rest := s
	for range 5 { // arn, partition, service, region, account
		_, after, ok := strings.Cut(rest, ":")
		if !ok {
			return s
		}
		rest = after
	}
	kind, rest, ok := strings.Cut(rest, ":")
	if !ok || kind != "function" {
		return s
	}
	name, _, _ := strings.Cut(rest, ":")
	return name
}
