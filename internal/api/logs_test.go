package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/seatsaga/seatsaga/internal/obs"
)

// The request line names both requests without one hiding the other: the Lambda invocation's
// id (on every line, from the context) and API Gateway's own.
func TestTheRequestLineCarriesTheLambdaAndTheGatewayRequestIDs(t *testing.T) {
	r := newRig(t)
	var out bytes.Buffer
	r.h.d.Logger = obs.NewLogger(&out, slog.LevelInfo)
	req := idReq(http.MethodGet, "alice", "r_missing")
	req.RequestContext.RequestID = "apigw-1"
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "lambda-1"})
	if _, err := r.h.Handle(ctx, req); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(out.String())
	if strings.Count(line, `"requestId"`) != 1 {
		t.Fatalf("the line names requestId %d times: %s", strings.Count(line, `"requestId"`), line)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	if m[obs.KeyRequestID] != "lambda-1" || m["apiRequestId"] != "apigw-1" {
		t.Errorf("requestId %v, apiRequestId %v; want lambda-1 and apigw-1", m[obs.KeyRequestID], m["apiRequestId"])
	}
}
