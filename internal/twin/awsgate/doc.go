// Package awsgate is the local stack's front door to AWS. Every SDK client the twin builds
// points its BaseEndpoint here; the gate does what AWS's request layer does before a service
// sees a call, then hands the call on:
//
//   - it identifies the caller by the access key id in the SigV4 Authorization header;
//   - it works out, from the operation and the request body, which IAM actions on which
//     resource ARNs the call needs (a TransactWriteItems needs PutItem, UpdateItem, ... on
//     each item's table; a Query on an index needs Query on the index) and evaluates the
//     caller's policy statements against each, answering AccessDeniedException as AWS does;
//   - it forwards DynamoDB and DynamoDB Streams calls to DynamoDB Local and Step Functions
//     calls to the local Step Functions server, byte for byte, and serves Secrets Manager
//     (GetSecretValue, PutSecretValue) and EventBridge (PutEvents) itself;
//   - it counts every call it let through by the caller's role and the operation (Calls), once
//     per call as AWS bills and throttles them, so a sale can say what it asked of AWS.
//
// Why: each function's permissions (internal/deploy) are otherwise exercised only on AWS, so a
// missing grant would first show up in a deployed stage. With every local call checked against
// the same statements the CDK stack deploys, every local test also tests the policy.
//
// A stack wires it like this, then points every client's BaseEndpoint at url and signs each
// function's clients with that function's access key id:
//
//	gate, err := awsgate.New(awsgate.Options{
//		DynamoDBEndpoint:      ddb.Endpoint(),
//		StepFunctionsEndpoint: sfnURL,
//		TaskStateMachine:      tokenToStateMachine, // from the Step Functions engine
//	})
//	url, err := gate.Start("127.0.0.1:0")
//	defer gate.Close()
//	gate.AddAdmin("local") // the stack's own seeding and checking clients
//	keyARN, err := gate.CreateSecret(deploy.StripeSecretKey, stripeKey)
//	busARN, err := gate.AddEventBus(busName, memoryBus)
//	for _, fn := range deploy.Functions() {
//		gate.AddAssumedRole(accessKeyOf(fn.Name), "seatsaga-"+fn.Name, fn.Name, fn.Policy(resolver))
//	}
//
// What it deliberately leaves out: it does not verify signatures (it has no secret keys to
// verify them with; it only checks that the Authorization header has SigV4's shape and that
// its credential scope names the right service), and it evaluates identity-based Allow
// statements with Action and Resource only: no Deny, no conditions, no resource policies, no
// permission boundaries. It refuses the PartiQL operations (ExecuteStatement,
// BatchExecuteStatement, ExecuteTransaction) with UnknownOperationException: AWS authorizes
// them as dynamodb:PartiQLSelect/Insert/Update/Delete on the tables their statements name,
// which the gate does not parse. A SendTask* call with a task token the engine does not know
// is let through for any caller granted the action on some resource, so that it gets the
// engine's InvalidToken or TaskDoesNotExist as on AWS. Resource patterns match as IAM's do
// (see Allowed): * matches any run of characters, ':' and '/' included.
// Tables are authorized on arn:aws:dynamodb:<region>:<account>:table/<name> in the gate's
// region and account, streams on the stream ARN the call carries (or its shard iterator opens
// with): DynamoDB Local's, in region "ddblocal", so policies must name a stream as DynamoDB
// Local's DescribeTable does (LatestStreamArn), or by a pattern such as
// arn:aws:dynamodb:*:*:table/<name>/stream/*. It
// forwards DynamoDB calls under one access key id (Options.DynamoDBAccessKeyID), because
// DynamoDB Local refuses ids that are not alphanumeric and, without -sharedDb, keeps one
// database per id.
//
// Unlike AWS, PutEvents to an event bus that does not exist fails that entry
// (ResourceNotFoundException) instead of accepting it and dropping it, so that a misnamed bus
// shows up in tests.
package awsgate
