package awsgate

import "github.com/seatsaga/seatsaga/internal/deploy"

// AuthorizeForBenchmark runs what the gate does for a DynamoDB call before forwarding it:
// derive the call's requests from its body and evaluate each against statements.
func AuthorizeForBenchmark(statements []deploy.Statement, op string, body []byte) bool {
	reqs, err := testDeriver().requests(dynamoDB, op, body)
	if err != nil {
		return false
	}
	for _, r := range reqs {
		if !Allowed(statements, r) {
			return false
		}
	}
	return true
}
