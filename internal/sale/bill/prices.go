package bill

// Region is the AWS Region every price of the table is the list price of.
const Region = "us-east-1"

// PricesAsOf is the date the prices were looked up: a bill is only as true as its prices, and
// AWS changes them (DynamoDB's on-demand prices halved in November 2024).
const PricesAsOf = "2026-12-02"

// PriceID names one price of the table.
type PriceID string

// The prices a sale's bill uses.
const (
	StateTransition        PriceID = "states-transition"
	LambdaRequest          PriceID = "lambda-request"
	LambdaGBSecondArm      PriceID = "lambda-gb-second-arm64"
	DynamoDBReadUnit       PriceID = "dynamodb-read-request-unit"
	DynamoDBWriteUnit      PriceID = "dynamodb-write-request-unit"
	APIGatewayRESTRequest  PriceID = "apigateway-rest-request"
	EventBridgeCustomEvent PriceID = "eventbridge-custom-event"
	SQSRequest             PriceID = "sqs-request"
	SecretsManagerAPICall  PriceID = "secretsmanager-api-call"
	LogsIngestedGB         PriceID = "logs-ingested-gb"
)

// Price is one AWS list price: USD for one Unit of the item.
type Price struct {
	ID      PriceID `json:"id"`
	Service string  `json:"service"`
	Item    string  `json:"item"`
	Unit    string  `json:"unit"`
	USD     float64 `json:"usdPerUnit"`
	// Source is where the price was read; Verified says whether that page or document is
	// AWS's own and showed the figure itself. Unverified prices were confirmed only by a
	// secondary source, because AWS's pricing pages render their tables client-side and the
	// search index holds their text without the numbers.
	Source   string `json:"source"`
	Verified bool   `json:"verified"`
}

// Prices is the one table a bill is priced from: us-east-1 list prices on PricesAsOf, first
// tier, no free tier. Free tiers are per account and month, not per sale, and a sale's marginal
// cost is what the design is judged by; every volume below is far inside the first tier.
var Prices = []Price{
	// https://aws.amazon.com/step-functions/pricing/ — "$0.025 per 1,000 state transitions",
	// US East (N. Virginia) $0.0250 per 1,000; "each retry will be charged as an additional
	// state transition". Verified 2026-12-02.
	{ID: StateTransition, Service: "Step Functions", Item: "Standard state transitions (retries included)",
		Unit: "transition", USD: 0.025 / 1e3, Verified: true,
		Source: "https://aws.amazon.com/step-functions/pricing/"},
	// https://aws.amazon.com/lambda/pricing/ — $0.20 per 1M requests. Unverified on AWS's page
	// (its rate table renders client-side); quoted by https://cloudchipr.com/blog/aws-lambda-pricing
	// (US East) and the api-evangelist transcription of the page. 2026-12-02.
	{ID: LambdaRequest, Service: "Lambda", Item: "requests",
		Unit: "request", USD: 0.20 / 1e6,
		Source: "https://aws.amazon.com/lambda/pricing/"},
	// https://aws.amazon.com/lambda/pricing/ — Arm, first 7.5 billion GB-seconds a month:
	// $0.0000133334 per GB-second. The functions deploy on arm64 (infra/stack/functions.go,
	// awslambda.Architecture_ARM_64). Unverified on AWS's page; quoted by
	// https://cloudchipr.com/blog/aws-lambda-pricing (US East). 2026-12-02.
	{ID: LambdaGBSecondArm, Service: "Lambda", Item: "duration, arm64",
		Unit: "GB-second", USD: 0.0000133334,
		Source: "https://aws.amazon.com/lambda/pricing/"},
	// https://aws.amazon.com/dynamodb/pricing/on-demand/ — on-demand, Standard table class:
	// $0.125 per million read request units. Unverified on AWS's page (its text defines the
	// units, the numbers render client-side); quoted by
	// https://airbyte.com/data-engineering-resources/dynamodb-pricing (US East, after the
	// November 2024 reduction). 2026-12-02.
	{ID: DynamoDBReadUnit, Service: "DynamoDB", Item: "on-demand read request units",
		Unit: "RRU", USD: 0.125 / 1e6,
		Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/"},
	// Same page and secondary source: $0.625 per million write request units. 2026-12-02.
	{ID: DynamoDBWriteUnit, Service: "DynamoDB", Item: "on-demand write request units",
		Unit: "WRU", USD: 0.625 / 1e6,
		Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/"},
	// https://docs.aws.amazon.com/whitepapers/latest/best-practices-api-gateway-private-apis-integration/cost-optimization.html
	// — AWS's whitepaper, Table 4: REST APIs, first 333 million requests a month $3.50 per
	// million. Verified 2026-12-02. Throttled and unauthorized requests are not billed
	// (https://repost.aws/questions/QU5y4fo-e3RWyU5r4VmyPIzA, accepted AWS expert answer).
	{ID: APIGatewayRESTRequest, Service: "API Gateway", Item: "REST API requests",
		Unit: "request", USD: 3.50 / 1e6, Verified: true,
		Source: "https://docs.aws.amazon.com/whitepapers/latest/best-practices-api-gateway-private-apis-integration/cost-optimization.html"},
	// https://aws.amazon.com/eventbridge/pricing/ — custom events $1.00 per million, each 64 KB
	// chunk of a payload one event (the chunk rule is on AWS's page; the rate is unverified
	// there, quoted by https://blog.awsfundamentals.com/aws-eventbridge-pricing-guide and
	// https://cloudburn.io/blog/amazon-eventbridge-pricing, US East). 2026-12-02.
	{ID: EventBridgeCustomEvent, Service: "EventBridge", Item: "custom events published",
		Unit: "event", USD: 1.00 / 1e6,
		Source: "https://aws.amazon.com/eventbridge/pricing/"},
	// https://aws.amazon.com/sqs/pricing/ — standard queues $0.40 per million requests (64 KB
	// chunks). Unverified on AWS's page; quoted by https://cloudburn.io/blog/amazon-sqs-pricing
	// (US East, March 2026). 2026-12-02.
	{ID: SQSRequest, Service: "SQS", Item: "standard queue requests",
		Unit: "request", USD: 0.40 / 1e6,
		Source: "https://aws.amazon.com/sqs/pricing/"},
	// https://aws.amazon.com/secrets-manager/pricing/ — $0.05 per 10,000 API calls. Unverified
	// on AWS's page; quoted by https://hivebook.wiki/wiki/aws-secrets-manager-rotated-secrets-dynamic-db-credentials-kms.
	// 2026-12-02.
	{ID: SecretsManagerAPICall, Service: "Secrets Manager", Item: "API calls",
		Unit: "call", USD: 0.05 / 1e4,
		Source: "https://aws.amazon.com/secrets-manager/pricing/"},
	// https://aws.amazon.com/cloudwatch/pricing/ — Logs, Standard class, data ingested $0.50
	// per GB in us-east-1; Lambda's logs (vended since May 2025) start at the same $0.50 in
	// their first tier, as do Step Functions' vended logs. Unverified on AWS's page; quoted by
	// https://www.duckbillgroup.com/?p=9080 and https://hykell.com/kb/platform-specific-guides/aws-cloudwatch-logs-pricing.
	// 2026-12-02.
	{ID: LogsIngestedGB, Service: "CloudWatch Logs", Item: "data ingested",
		Unit: "GB", USD: 0.50,
		Source: "https://aws.amazon.com/cloudwatch/pricing/"},
}

// PriceOf returns the table's price of id; asking for one the table lacks is a programming
// error.
func PriceOf(id PriceID) Price {
	for _, p := range Prices {
		if p.ID == id {
			return p
		}
	}
	panic("bill: no price " + string(id))
}
