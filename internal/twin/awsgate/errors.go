package awsgate

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
)

// apiError is an error answered in AWS's JSON-protocol shape:
// {"__type": "<namespace>#<Code>", "Message": "..."} with header x-amzn-ErrorType: <Code>,
// from which aws-sdk-go-v2 builds a smithy.APIError whose ErrorCode() is Code.
type apiError struct {
	status int
	// code is the short code clients see, e.g. AccessDeniedException.
	code string
	// typ is the body's __type, e.g. com.amazon.coral.service#AccessDeniedException.
	typ string
	// messageKey is "Message" or "message", as the service spells it for this error.
	messageKey string
	message    string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// coralError is an error of AWS's common request layer (authentication, authorization,
// protocol), which every service names in the com.amazon.coral.service namespace.
func coralError(status int, code, messageKey, message string) *apiError {
	return &apiError{status: status, code: code, typ: "com.amazon.coral.service#" + code, messageKey: messageKey, message: message}
}

// serviceError is an error a service itself answers, named without a namespace as Secrets
// Manager and EventBridge do.
func serviceError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, typ: code, messageKey: "Message", message: fmt.Sprintf(format, args...)}
}

func unrecognizedClient() *apiError {
	return coralError(http.StatusBadRequest, "UnrecognizedClientException", "message",
		"The security token included in the request is invalid.")
}

func incompleteSignature(reason string) *apiError {
	return coralError(http.StatusBadRequest, "IncompleteSignatureException", "message", reason)
}

func invalidSignature(reason string) *apiError {
	return coralError(http.StatusBadRequest, "InvalidSignatureException", "message", reason)
}

func unknownOperation(target string) *apiError {
	return coralError(http.StatusBadRequest, "UnknownOperationException", "message",
		fmt.Sprintf("Operation %q is not known to the local AWS gate.", target))
}

// partiQLNotModelled refuses a PartiQL operation. On AWS it needs dynamodb:PartiQLSelect,
// PartiQLInsert, PartiQLUpdate or PartiQLDelete on each table its statements name, which only
// parsing the statements would tell; the gate does not model that, and refuses the call rather
// than authorize it on something else.
func partiQLNotModelled(target string) *apiError {
	return coralError(http.StatusBadRequest, "UnknownOperationException", "message", fmt.Sprintf(
		"Operation %q is PartiQL, which the local AWS gate does not serve: it does not model the "+
			"dynamodb:PartiQLSelect/PartiQLInsert/PartiQLUpdate/PartiQLDelete grants AWS checks on each "+
			"statement's table. Use the item operations (GetItem, PutItem, Query, TransactWriteItems, ...).",
		target))
}

func serializationError(format string, args ...any) *apiError {
	return coralError(http.StatusBadRequest, "SerializationException", "Message", fmt.Sprintf(format, args...))
}

// accessDenied is AWS's answer when no statement of the caller's policy allows r.
func accessDenied(principalARN string, r Request) *apiError {
	return coralError(http.StatusBadRequest, "AccessDeniedException", "Message", fmt.Sprintf(
		"User: %s is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action",
		principalARN, r.Action, r.Resource, r.Action))
}

// writeError answers e in the JSON protocol of svc (nil when the service is unknown).
// DynamoDB clients check X-Amz-Crc32 when it is present, so DynamoDB errors carry it as
// DynamoDB's own do.
func writeError(w http.ResponseWriter, svc *service, requestID string, e *apiError) {
	body, err := json.Marshal(map[string]string{"__type": e.typ, e.messageKey: e.message})
	if err != nil {
		// A map of strings always marshals; keep the answer well-formed anyway.
		body = []byte(`{"__type":"com.amazon.coral.service#InternalFailure"}`)
	}
	h := w.Header()
	h.Set("Content-Type", svc.contentTypeOrDefault())
	h.Set("X-Amzn-ErrorType", e.code)
	h.Set("X-Amzn-RequestId", requestID)
	if svc == dynamoDB || svc == dynamoDBStreams {
		h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}

// writeResult answers a served operation's result v.
func writeResult(w http.ResponseWriter, svc *service, requestID string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, svc, requestID, coralError(http.StatusInternalServerError, "InternalFailure", "message",
			fmt.Sprintf("awsgate: encode response: %v", err)))
		return
	}
	h := w.Header()
	h.Set("Content-Type", svc.contentTypeOrDefault())
	h.Set("X-Amzn-RequestId", requestID)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
