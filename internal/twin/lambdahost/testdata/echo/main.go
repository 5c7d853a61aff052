// Command echo is a test function for lambdahost's process runner: it answers each event with
// the event itself, the invocation's metadata and the environment it was started with, and
// can be told to hang, to exit mid-invocation or to start a child process.
package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	// Hang makes the handler wait past its deadline.
	Hang bool `json:"hang"`
	// Exit makes the process exit with this status mid-invocation.
	Exit int `json:"exit"`
	// Spawn starts a child process that sleeps until killed and reports its pid.
	Spawn bool `json:"spawn"`
}

type answer struct {
	Event        json.RawMessage   `json:"event"`
	RequestID    string            `json:"requestId"`
	FunctionARN  string            `json:"functionArn"`
	FunctionName string            `json:"functionName"`
	DeadlineMs   int64             `json:"deadlineMs"`
	TraceID      string            `json:"traceId"`
	ClientCustom map[string]string `json:"clientCustom"`
	Env          []string          `json:"env"`
	ChildPid     int               `json:"childPid,omitempty"`
}

// startEnv is captured before lambda.Start, because the runtime itself sets _X_AMZN_TRACE_ID
// for each event.
var startEnv = os.Environ()

func main() {
	if os.Getenv("ECHO_SLEEPER") == "1" {
		// The spawned child: do nothing until killed. (A bare select{} would be reported as
		// a deadlock, this being its only goroutine.)
		for {
			time.Sleep(time.Hour)
		}
	}
	lambda.Start(func(ctx context.Context, raw json.RawMessage) (answer, error) {
		var ev event
		_ = json.Unmarshal(raw, &ev)
		if ev.Exit != 0 {
			os.Exit(ev.Exit)
		}
		if ev.Hang {
			time.Sleep(time.Hour)
		}
		lc, _ := lambdacontext.FromContext(ctx)
		deadline, _ := ctx.Deadline()
		a := answer{
			Event:        raw,
			RequestID:    lc.AwsRequestID,
			FunctionARN:  lc.InvokedFunctionArn,
			FunctionName: lambdacontext.FunctionName,
			DeadlineMs:   deadline.UnixMilli(),
			TraceID:      os.Getenv("_X_AMZN_TRACE_ID"),
			ClientCustom: lc.ClientContext.Custom,
			Env:          startEnv,
		}
		if ev.Spawn {
			self, err := os.Executable()
			if err != nil {
				return answer{}, err
			}
			child := exec.Command(self)
			child.Env = []string{"ECHO_SLEEPER=1"}
			if err := child.Start(); err != nil {
				return answer{}, err
			}
			a.ChildPid = child.Process.Pid
		}
		return a, nil
	})
}
