package dynamodblocal

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Another server that took the port picked for DynamoDB Local is not mistaken for it: only an
// answer in DynamoDB's own error shape counts as ready.
func TestReadinessNeedsDynamoDBsAnswerNotAnyServers(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"__type":"UnknownOperationException","message":"Unknown operation POST /"}`))
	}))
	defer other.Close()
	if err := waitReady(context.Background(), other.URL, nil, 500*time.Millisecond); err == nil {
		t.Fatal("a server that is not DynamoDB was taken for DynamoDB Local")
	}
	ddb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#MissingAuthenticationToken","Message":"Request must contain either a valid (registered) AWS access key ID or X.509 certificate."}`))
	}))
	defer ddb.Close()
	if err := waitReady(context.Background(), ddb.URL, nil, 2*time.Second); err != nil {
		t.Fatalf("DynamoDB's own answer was not taken as ready: %v", err)
	}
}
