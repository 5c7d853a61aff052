package webhook

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/payment"
)

// The real adapters satisfy the handler's narrow interfaces (internal/app hands this package
// the DynamoDB store itself, *inventory.Store).
var (
	_ StepFunctions = (*sfn.Client)(nil)
	_ Payments      = payment.Provider(nil)
	_ DynamoDB      = (*dynamodb.Client)(nil)
	_ DedupeStore   = (*DynamoDedupe)(nil)
)
