// Package sfnadapter is the sweeper's Step Functions adapter: it lists the RUNNING executions
// of the reservation state machine with ListExecutions, for sweeper.RunningExecutions. The
// sweeper keeps the paging policy (how far to read, what to publish); this package only turns
// one page of the API into the sweeper's terms, so the sweeper's port carries no AWS type.
package sfnadapter

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/sweeper"
)

// MaxPageSize is the most executions one ListExecutions call returns; asking for it keeps the
// number of calls, and so the share of the API's request rate a sweep takes, smallest.
const MaxPageSize = 1000

// ListExecutionsAPI is the Step Functions call the adapter makes; *sfn.Client satisfies it. IAM
// authorizes it on the state machine's ARN (states:ListExecutions).
type ListExecutionsAPI interface {
	ListExecutions(ctx context.Context, in *sfn.ListExecutionsInput, optFns ...func(*sfn.Options)) (*sfn.ListExecutionsOutput, error)
}

// Running lists RUNNING executions through Client.
type Running struct {
	Client ListExecutionsAPI
	// PageSize is how many executions a page asks for (default and at most MaxPageSize).
	PageSize int32
}

var (
	_ sweeper.RunningExecutions = (*Running)(nil)
	_ ListExecutionsAPI         = (*sfn.Client)(nil)
)

// New returns the adapter over client, asking for full pages.
func New(client ListExecutionsAPI) *Running { return &Running{Client: client} }

// RunningExecutions implements sweeper.RunningExecutions with one ListExecutions call
// filtered to RUNNING, which Step Functions answers newest first.
func (r *Running) RunningExecutions(ctx context.Context, stateMachineARN, pageToken string) (sweeper.RunningPage, error) {
	size := r.PageSize
	if size <= 0 || size > MaxPageSize {
		size = MaxPageSize
	}
	in := &sfn.ListExecutionsInput{StateMachineArn: aws.String(stateMachineARN),
		StatusFilter: sfntypes.ExecutionStatusRunning, MaxResults: size}
	if pageToken != "" {
		in.NextToken = aws.String(pageToken)
	}
	out, err := r.Client.ListExecutions(ctx, in)
	if err != nil {
		return sweeper.RunningPage{}, fmt.Errorf("sfnadapter: list running executions of %s: %w", stateMachineARN, err)
	}
	page := sweeper.RunningPage{Next: aws.ToString(out.NextToken)}
	for _, e := range out.Executions {
		// The filter is the server's; an execution it lists in another state, or without a
		// start date, says nothing about how long one has been running.
		if e.Status != sfntypes.ExecutionStatusRunning || e.StartDate == nil {
			continue
		}
		page.Started = append(page.Started, *e.StartDate)
	}
	return page, nil
}
