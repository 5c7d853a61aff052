package api

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/payment"
)

// The real adapters satisfy the handler's narrow interfaces.
var (
	_ StepFunctions    = (*sfn.Client)(nil)
	_ ReservationStore = (*inventory.Store)(nil)
	_ SeatCatalog      = (*DynamoCatalog)(nil)
	_ DynamoReader     = (*dynamodb.Client)(nil)
	_ PaymentReader    = payment.Provider(nil)
)
