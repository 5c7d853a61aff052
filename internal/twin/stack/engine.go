package stack

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/twin/asl/lambdainvoke"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

// startEngine starts the local Step Functions service with its Lambda tasks invoked through the
// Lambda host, and creates the saga's state machine from the ASL file with the local function
// ARNs substituted, as the CDK app does with DefinitionSubstitutions.
func (st *Stack) startEngine(ctx context.Context) error {
	srv := stepfunctions.New(stepfunctions.Options{
		Clock:         st.Clock,
		Invoker:       lambdainvoke.New(st.Lambda),
		Region:        Region,
		AccountID:     AccountID,
		Substitutions: Substitutions(),
		Logger:        st.log,
		Quotas:        st.stepFunctionsQuotas(),
	})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	st.sfnServer = srv
	st.onClose(func() error {
		// Executions run in the background; stop those still running so nothing outlives
		// the stack.
		for _, x := range srv.Executions(st.StateMachineARN) {
			x.Stop("States.Aborted", "the local stack is shutting down")
		}
		return srv.Close()
	})
	st.Endpoints.StepFunctions = url
	// The stack's own client (the invariant checker, the inspection, the tests' polls) reads
	// through the inspection endpoint: what the twin looks at is not the account's traffic
	// and must neither spend nor meet its quotas. The functions call the throttled one.
	inspection, err := srv.StartInspection("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	st.SFN = sfn.New(sfn.Options{Region: Region, BaseEndpoint: aws.String(inspection), Credentials: localCredentials()})
	out, err := st.SFN.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
		Name:       aws.String(StateMachineName),
		Definition: aws.String(string(st.Definition)),
		RoleArn:    aws.String(fmt.Sprintf("arn:aws:iam::%s:role/seatsaga-local-states", AccountID)),
		Type:       sfntypes.StateMachineTypeStandard,
	})
	if err != nil {
		return fmt.Errorf("stack: create the saga's state machine: %w", err)
	}
	st.StateMachineARN = aws.ToString(out.StateMachineArn)
	return nil
}
