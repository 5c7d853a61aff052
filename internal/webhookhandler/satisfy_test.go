package webhookhandler

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/wiring"
)

// The real adapters satisfy the handler's narrow interfaces.
var (
	_ StepFunctions = (*sfn.Client)(nil)
	_ Store         = wiring.StoreAdapter{}
	_ Payments      = payment.Provider(nil)
	_ DynamoDB      = (*dynamodb.Client)(nil)
	_ DedupeStore   = (*DynamoDedupe)(nil)
)
