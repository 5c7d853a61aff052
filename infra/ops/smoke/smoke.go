// Package smoke buys one seat through a deployed stack the way a customer would, to show an
// operator before a sale that every part answers: Cognito signs a test user in, the API takes
// the booking, the saga claims the seat, Stripe authorizes the test card and sends its
// webhook, the saga confirms and captures, and the PaymentIntent at Stripe agrees.
//
// The API takes the payment method with the booking and the saga's authorize step confirms
// the PaymentIntent with it (internal/saga: Input.PaymentMethod), so the smoke test pays by
// sending Stripe's test card pm_card_visa in the request; confirming the PaymentIntent again
// from here would race the saga's own confirmation. It reads the stage's Stripe key from
// Secrets Manager to refuse a live-mode key up front (live mode declines test cards) and to
// check the money at Stripe afterwards.
package smoke

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	ciptypes "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// TestCard is Stripe's test payment method that always authorizes.
const TestCard = "pm_card_visa"

// DefaultStripeAPIBase is Stripe's API.
const DefaultStripeAPIBase = "https://api.stripe.com"

// Cognito is the part of the user pools API the smoke test uses.
type Cognito interface {
	AdminCreateUser(ctx context.Context, in *cip.AdminCreateUserInput, opts ...func(*cip.Options)) (*cip.AdminCreateUserOutput, error)
	AdminSetUserPassword(ctx context.Context, in *cip.AdminSetUserPasswordInput, opts ...func(*cip.Options)) (*cip.AdminSetUserPasswordOutput, error)
	AdminInitiateAuth(ctx context.Context, in *cip.AdminInitiateAuthInput, opts ...func(*cip.Options)) (*cip.AdminInitiateAuthOutput, error)
}

// Secrets reads a secret's value.
type Secrets interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Target names the deployed parts, as the stack's outputs do.
type Target struct {
	// APIURL is the ApiUrl output (https://<api>.execute-api.<region>.amazonaws.com/<stage>/).
	APIURL          string
	UserPoolID      string
	ClientID        string
	StripeSecretARN string
	StateMachineARN string
	// StripeAPIBase is Stripe's API (default DefaultStripeAPIBase).
	StripeAPIBase string
}

// Config configures a run.
type Config struct {
	Target
	Cognito Cognito
	Secrets Secrets
	// HTTP calls the API and Stripe (default: a client with a 30 s timeout).
	HTTP *http.Client
	// Email names the test user, created on first use and reused after.
	Email string
	// EventID and SeatID are the seat to buy; it must be AVAILABLE and on sale.
	EventID, SeatID string
	// NewSeat, when SeatID is empty, creates the seat to buy in EventID and returns its id.
	// Run calls it once the stage has passed the checks that need no writes.
	NewSeat func(ctx context.Context) (string, error)
	// Timeout bounds the wait for CONFIRMED and PAID (default 3 minutes).
	Timeout time.Duration
	// PollEvery is the pause between status reads (default 1 s).
	PollEvery time.Duration
	// Progress receives a line per step (nil: discarded).
	Progress io.Writer
}

// Report is what a successful run saw.
type Report struct {
	Email, Subject                 string
	EventID, SeatID, ReservationID string
	PaymentIntentID                string
	Amount                         int64
	Currency                       string
	// States are the reservation's statuses in the order they were read.
	States       []string
	ExecutionARN string
	// ConsoleURL opens the execution in the Step Functions console ("" outside the aws
	// partition).
	ConsoleURL string
	Took       time.Duration
}

// Run signs the test user in, books the seat, waits for the saga to confirm and capture, and
// checks the PaymentIntent at Stripe.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg = withDefaults(cfg)
	r := Report{Email: cfg.Email, EventID: cfg.EventID, SeatID: cfg.SeatID}
	key, err := stripeTestKey(ctx, cfg)
	if err != nil {
		return r, err
	}
	token, sub, err := signIn(ctx, cfg)
	if err != nil {
		return r, err
	}
	r.Subject = sub
	cfg.progress("signed in %s (sub %s)", cfg.Email, sub)
	if cfg.SeatID == "" {
		if cfg.NewSeat == nil {
			return r, errors.New("no seat to buy: name one or give NewSeat")
		}
		if cfg.SeatID, err = cfg.NewSeat(ctx); err != nil {
			return r, err
		}
		r.SeatID = cfg.SeatID
		cfg.progress("created seat %s of event %s", cfg.SeatID, cfg.EventID)
	}

	start := time.Now()
	if r.ReservationID, err = book(ctx, cfg, token); err != nil {
		return r, err
	}
	r.ExecutionARN = ExecutionARN(cfg.StateMachineARN, r.ReservationID)
	r.ConsoleURL = ConsoleURL(r.ExecutionARN)
	cfg.progress("booked seat %s of event %s: reservation %s", cfg.SeatID, cfg.EventID, r.ReservationID)

	final, states, err := waitForPaid(ctx, cfg, token, r.ReservationID)
	r.States = states
	if err != nil {
		return r, err
	}
	r.Took = time.Since(start)
	r.PaymentIntentID, r.Amount, r.Currency = final.PaymentIntentID, final.Amount, final.Currency
	cfg.progress("%s, payment %s after %s", strings.Join(states, " → "), final.PaymentState, r.Took.Round(100*time.Millisecond))

	if err := checkAtStripe(ctx, cfg, key, final); err != nil {
		return r, err
	}
	cfg.progress("Stripe: PaymentIntent %s succeeded, %d %s received", final.PaymentIntentID, final.Amount, final.Currency)
	return r, nil
}

func withDefaults(cfg Config) Config {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.StripeAPIBase == "" {
		cfg.StripeAPIBase = DefaultStripeAPIBase
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Minute
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = time.Second
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	return cfg
}

func (cfg Config) progress(format string, args ...any) {
	fmt.Fprintf(cfg.Progress, "smoke: "+format+"\n", args...)
}

// stripeTestKey reads the stage's Stripe key and refuses anything but a test-mode key: the
// smoke test pays with a test card, which live mode declines (and the decline would page
// someone through the ProviderRefusals alarm).
func stripeTestKey(ctx context.Context, cfg Config) (string, error) {
	out, err := cfg.Secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(cfg.StripeSecretARN)})
	if err != nil {
		return "", fmt.Errorf("read the Stripe key %s: %w", cfg.StripeSecretARN, err)
	}
	key := strings.TrimSpace(aws.ToString(out.SecretString))
	switch {
	case strings.HasPrefix(key, "sk_test_"), strings.HasPrefix(key, "rk_test_"):
		return key, nil
	case strings.HasPrefix(key, "sk_live_"), strings.HasPrefix(key, "rk_live_"):
		return "", fmt.Errorf("the Stripe key in %s is a live-mode key: the smoke test pays with Stripe's test card %s, which live mode declines; run it while the stage has a test key (sk_test_...)", cfg.StripeSecretARN, TestCard)
	default:
		return "", fmt.Errorf("the Stripe key in %s is not a Stripe secret key (still the stack's placeholder?): put a test key there first (infra/README.md, \"Set the two Stripe secrets\")", cfg.StripeSecretARN)
	}
}

// signIn creates the test user (or reuses it), gives it a new random permanent password and
// signs in with ADMIN_USER_PASSWORD_AUTH, returning the ID token and the user's sub. No email
// is sent: the invitation is suppressed.
func signIn(ctx context.Context, cfg Config) (idToken, sub string, err error) {
	_, err = cfg.Cognito.AdminCreateUser(ctx, &cip.AdminCreateUserInput{
		UserPoolId: aws.String(cfg.UserPoolID),
		Username:   aws.String(cfg.Email),
		UserAttributes: []ciptypes.AttributeType{
			{Name: aws.String("email"), Value: aws.String(cfg.Email)},
			{Name: aws.String("email_verified"), Value: aws.String("true")},
		},
		MessageAction: ciptypes.MessageActionTypeSuppress,
	})
	var exists *ciptypes.UsernameExistsException
	switch {
	case errors.As(err, &exists):
		cfg.progress("reusing test user %s", cfg.Email)
	case err != nil:
		return "", "", fmt.Errorf("create test user %s in %s: %w", cfg.Email, cfg.UserPoolID, err)
	default:
		cfg.progress("created test user %s", cfg.Email)
	}
	password, err := newPassword()
	if err != nil {
		return "", "", err
	}
	if _, err := cfg.Cognito.AdminSetUserPassword(ctx, &cip.AdminSetUserPasswordInput{
		UserPoolId: aws.String(cfg.UserPoolID), Username: aws.String(cfg.Email), Password: aws.String(password), Permanent: true,
	}); err != nil {
		return "", "", fmt.Errorf("set the test user's password: %w", err)
	}
	out, err := cfg.Cognito.AdminInitiateAuth(ctx, &cip.AdminInitiateAuthInput{
		UserPoolId: aws.String(cfg.UserPoolID), ClientId: aws.String(cfg.ClientID),
		AuthFlow:       ciptypes.AuthFlowTypeAdminUserPasswordAuth,
		AuthParameters: map[string]string{"USERNAME": cfg.Email, "PASSWORD": password},
	})
	if err != nil {
		return "", "", fmt.Errorf("sign the test user in (app client %s must allow ALLOW_ADMIN_USER_PASSWORD_AUTH): %w", cfg.ClientID, err)
	}
	if out.AuthenticationResult == nil || aws.ToString(out.AuthenticationResult.IdToken) == "" {
		return "", "", fmt.Errorf("sign-in answered challenge %q instead of tokens: the test user needs a permanent password and no MFA", out.ChallengeName)
	}
	idToken = aws.ToString(out.AuthenticationResult.IdToken)
	return idToken, subjectOf(idToken), nil
}

// subjectOf reads sub from an ID token's payload without verifying it (API Gateway does
// that); "" when the token is not readable, which only costs the report a detail.
func subjectOf(token string) string {
	// A JWT's payload is its second segment; trying each also reads the local stack's tokens.
	for _, p := range strings.Split(token, ".") {
		var claims struct {
			Sub string `json:"sub"`
		}
		if b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p, "=")); err == nil && json.Unmarshal(b, &claims) == nil && claims.Sub != "" {
			return claims.Sub
		}
	}
	return ""
}

// apiError is the API's error body.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// book posts the reservation with the test card and returns its id.
func book(ctx context.Context, cfg Config, token string) (string, error) {
	body, _ := json.Marshal(map[string]any{"seatIds": []string{cfg.SeatID}, "paymentMethod": TestCard})
	u := strings.TrimSuffix(cfg.APIURL, "/") + "/events/" + url.PathEscape(cfg.EventID) + "/reservations"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("book: %w", err)
	}
	key, err := randomHex(8)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	// API Gateway's Cognito authorizer takes the ID token as the whole header.
	req.Header.Set("Authorization", token)
	req.Header.Set("Idempotency-Key", "smoke-"+time.Now().UTC().Format("20060102T150405")+"-"+key)
	status, respBody, err := do(cfg.HTTP, req)
	if err != nil {
		return "", fmt.Errorf("book seat %s of event %s: %w", cfg.SeatID, cfg.EventID, err)
	}
	if status != http.StatusAccepted && status != http.StatusOK {
		return "", fmt.Errorf("book seat %s of event %s: %s", cfg.SeatID, cfg.EventID, describe(status, respBody))
	}
	var created struct {
		ReservationID string `json:"reservationId"`
	}
	if err := json.Unmarshal(respBody, &created); err != nil || created.ReservationID == "" {
		return "", fmt.Errorf("book seat %s of event %s: answer %d without a reservation id: %s", cfg.SeatID, cfg.EventID, status, respBody)
	}
	return created.ReservationID, nil
}

// status is the part of GET /reservations/{id} the smoke test reads.
type status struct {
	Status          string `json:"status"`
	PaymentState    string `json:"paymentState"`
	Outcome         string `json:"outcome"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	PaymentIntentID string `json:"paymentIntentId"`
}

// waitForPaid reads the reservation until it is CONFIRMED and PAID, gives up on a terminal
// state, and stops at the timeout.
func waitForPaid(ctx context.Context, cfg Config, token, id string) (status, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	u := strings.TrimSuffix(cfg.APIURL, "/") + "/reservations/" + url.PathEscape(id)
	var states []string
	var last status
	lastAnswer := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return last, states, fmt.Errorf("read reservation %s: %w", id, err)
		}
		req.Header.Set("Authorization", token)
		code, body, err := do(cfg.HTTP, req)
		switch {
		case err != nil && ctx.Err() == nil:
			lastAnswer = err.Error()
		case err != nil:
		case code == http.StatusOK:
			var s status
			if err := json.Unmarshal(body, &s); err != nil {
				return last, states, fmt.Errorf("read reservation %s: %s is not a reservation: %w", id, body, err)
			}
			last, lastAnswer = s, fmt.Sprintf("%s, payment %s", s.Status, s.PaymentState)
			if len(states) == 0 || states[len(states)-1] != s.Status {
				states = append(states, s.Status)
				if s.PaymentState == "" {
					cfg.progress("reservation %s: %s", id, s.Status)
				} else {
					cfg.progress("reservation %s: %s (payment %s)", id, s.Status, s.PaymentState)
				}
			}
			switch {
			case s.Status == "CONFIRMED" && s.PaymentState == "PAID":
				return s, states, nil
			case s.Status == "RELEASED" || s.Status == "REJECTED":
				return s, states, fmt.Errorf("reservation %s ended %s (payment %s, outcome %q): open the execution to see why", id, s.Status, s.PaymentState, s.Outcome)
			}
		case code == http.StatusConflict || code == http.StatusTooManyRequests || code >= 500:
			// Throttled, or a busy dependency: ask again.
			lastAnswer = describe(code, body)
		default:
			return last, states, fmt.Errorf("read reservation %s: %s", id, describe(code, body))
		}
		select {
		case <-ctx.Done():
			hint := ""
			if last.Status == "PAYMENT_PENDING" {
				hint = "; the payment never completed: check that the Stripe webhook is registered and its signing secret stored (infra/README.md)"
			}
			return last, states, fmt.Errorf("reservation %s was not CONFIRMED and PAID within %s (last: %s)%s", id, cfg.Timeout, lastAnswer, hint)
		case <-time.After(cfg.PollEvery):
		}
	}
}

// checkAtStripe retrieves the PaymentIntent with the stage's key: the saga's record says the
// money was captured, and Stripe must agree.
func checkAtStripe(ctx context.Context, cfg Config, key string, s status) error {
	if s.PaymentIntentID == "" {
		return errors.New("the confirmed reservation names no PaymentIntent")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		strings.TrimSuffix(cfg.StripeAPIBase, "/")+"/v1/payment_intents/"+url.PathEscape(s.PaymentIntentID), nil)
	if err != nil {
		return fmt.Errorf("retrieve PaymentIntent %s: %w", s.PaymentIntentID, err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	code, body, err := do(cfg.HTTP, req)
	if err != nil {
		return fmt.Errorf("retrieve PaymentIntent %s: %w", s.PaymentIntentID, err)
	}
	if code != http.StatusOK {
		return fmt.Errorf("retrieve PaymentIntent %s: Stripe answered %d: %s", s.PaymentIntentID, code, body)
	}
	var pi struct {
		Status         string `json:"status"`
		AmountReceived int64  `json:"amount_received"`
		Currency       string `json:"currency"`
	}
	if err := json.Unmarshal(body, &pi); err != nil {
		return fmt.Errorf("retrieve PaymentIntent %s: %w", s.PaymentIntentID, err)
	}
	if pi.Status != "succeeded" || pi.AmountReceived != s.Amount || !strings.EqualFold(pi.Currency, s.Currency) {
		return fmt.Errorf("PaymentIntent %s at Stripe is %s with %d %s received; the reservation says %d %s was captured",
			s.PaymentIntentID, pi.Status, pi.AmountReceived, pi.Currency, s.Amount, s.Currency)
	}
	return nil
}

// ExecutionARN names the reservation's execution: executions are named by reservation id
// under the saga's state machine (internal/api does the same).
func ExecutionARN(stateMachineARN, reservationID string) string {
	return strings.Replace(stateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + reservationID
}

// ConsoleURL opens an execution in the Step Functions console of its region.
func ConsoleURL(executionARN string) string {
	parts := strings.Split(executionARN, ":")
	if len(parts) < 4 || parts[1] != "aws" {
		return ""
	}
	region := parts[3]
	return "https://" + region + ".console.aws.amazon.com/states/home?region=" + region + "#/v2/executions/details/" + executionARN
}

func do(client *http.Client, req *http.Request) (int, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, body, nil
}

// describe renders an API answer: its code and message when it has them.
func describe(code int, body []byte) string {
	var e apiError
	if json.Unmarshal(body, &e) == nil && e.Code != "" {
		return fmt.Sprintf("%d %s: %s", code, e.Code, e.Message)
	}
	var gateway struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &gateway) == nil && gateway.Message != "" {
		// API Gateway's own answers: 401 Unauthorized, 403 Missing Authentication Token, 429.
		return fmt.Sprintf("%d from API Gateway: %s", code, gateway.Message)
	}
	return fmt.Sprintf("%d: %.200s", code, body)
}

// newPassword is a random password satisfying the stack's policy: 32 characters with lower
// and upper case letters, digits and symbols.
func newPassword() (string, error) {
	const (
		lower   = "abcdefghijkmnopqrstuvwxyz"
		upper   = "ABCDEFGHJKLMNPQRSTUVWXYZ"
		digits  = "23456789"
		symbols = "!#%+-=_"
	)
	classes := []string{lower, upper, digits, symbols}
	all := strings.Join(classes, "")
	out := make([]byte, 32)
	for i := range out {
		set := all
		if i < len(classes) {
			set = classes[i]
		}
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		if err != nil {
			return "", fmt.Errorf("generate a password: %w", err)
		}
		out[i] = set[n.Int64()]
	}
	return string(out), nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate an idempotency key: %w", err)
	}
	return hex.EncodeToString(b), nil
}
