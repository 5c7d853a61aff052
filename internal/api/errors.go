package api

import (
	"encoding/json"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// Error is a client-facing failure: an HTTP status and a JSON body {code, message}. Codes are
// stable identifiers clients may branch on; messages are for people.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfter, when positive, is sent as a Retry-After header (seconds).
	RetryAfter int `json:"-"`
	// Amount and Currency, on price_changed, are the server's price of the requested seats (minor
	// units, currency lower case), so the client can show it and ask again.
	Amount   int64  `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
	// Money, on already_confirmed, says what happens to the money instead of a cancel:
	// MoneyCaptured or MoneyBeingCaptured, unless the capture failed.
	Money string `json:"money,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func badRequest(code, message string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: code, Message: message}
}

func notFound(message string) *Error {
	return &Error{Status: http.StatusNotFound, Code: "not_found", Message: message}
}

func conflict(code, message string) *Error {
	return &Error{Status: http.StatusConflict, Code: code, Message: message}
}

var errUnauthorized = &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "the request carries no authenticated customer"}

// errInternal hides the cause from the client; the handler logs it.
var errInternal = &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "the request could not be completed; retry with the same Idempotency-Key"}

// errBusy answers a request that kept losing write races to other writers of the same
// reservation: the conflict is with the reservation's state, so a 4xx, not a 5xx that would
// count as the system failing.
var errBusy = &Error{Status: http.StatusConflict, Code: "reservation_busy", Message: "the reservation kept changing under this request; retry it", RetryAfter: 1}

// errThrottled answers a request an AWS quota refused: the request was fine and nothing is
// lost, so the buyer is asked to retry the same request shortly, as a throttling API Gateway
// would, rather than told the system failed.
var errThrottled = &Error{Status: http.StatusTooManyRequests, Code: "throttled", Message: "too many requests right now; retry with the same Idempotency-Key", RetryAfter: 1}

var errUnavailable = &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the service is busy; retry with the same Idempotency-Key", RetryAfter: 1}

func errorResponse(e *Error) events.APIGatewayProxyResponse {
	resp := jsonResponse(e.Status, e)
	if e.RetryAfter > 0 {
		resp.Headers["Retry-After"] = itoa(e.RetryAfter)
	}
	return resp
}

func jsonResponse(status int, body any) events.APIGatewayProxyResponse {
	b, err := json.Marshal(body)
	if err != nil {
		// Every body is a plain struct of strings and numbers; this cannot happen.
		b = []byte(`{"code":"internal","message":"response encoding failed"}`)
		status = http.StatusInternalServerError
	}
	return events.APIGatewayProxyResponse{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":  "application/json",
			"Cache-Control": "no-store",
		},
		Body: string(b),
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
