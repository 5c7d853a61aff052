package sweeper

import (
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// The real adapters satisfy the sweeper's narrow interfaces.
var (
	_ Backlog    = (*inventory.Store)(nil)
	_ Expirer    = (*inventory.Store)(nil)
	_ Reconciler = (*saga.Steps)(nil)
	_ Executions = (*sfn.Client)(nil)
)
