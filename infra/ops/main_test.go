package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/cognito"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
)

// These tests run the commands, flags and all, against the local stack: DynamoDB Local, the
// saga, the API gateway and the payment simulator of internal/twin/stack, the local Cognito
// trusted by the gateway, Secrets Manager as the stack's AWS gate serves it, and a small
// stand-in for the one AWS API the twin lacks (CloudFormation's DescribeStacks). Only the
// endpoints differ from a run against AWS.

// twinStack is the stack name the CloudFormation stand-in answers for; the twin's tables are
// named under it as the deployed stack names them.
const twinStack = "Seatsaga-twin"

var env struct {
	st      *stack.Stack
	pool    *cognito.Server
	cognito string
	cfn     *fakeCloudFormation
	// otherSecrets are secrets that are no test-mode Stripe key, by name.
	otherSecrets map[string]string
}

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	env.otherSecrets = map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Config{TablePrefix: twinStack + "-", Hold: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the local stack:", err)
		return 1
	}
	defer st.Close()
	env.st = st
	// The stack's local Cognito signs with the gateway's authorizer, so the gateway trusts its
	// ID tokens; its Secrets Manager is the gate's, read here with the operator's (admin)
	// credentials.
	env.pool, env.cognito = st.Cognito, st.Endpoints.Cognito
	secretARN := st.SecretARN(deploy.StripeSecretKey)
	for name, value := range map[string]string{"live": "sk_live_do_not_use", "placeholder": "q8Zr0-random-placeholder"} {
		arn, err := st.Gate.CreateSecret(name, value)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		env.otherSecrets[name] = arn
	}
	env.cfn = newFakeCloudFormation(map[string]map[string]string{
		twinStack: {
			outApiURL: st.Endpoints.API + "/", outUserPoolID: env.pool.UserPoolID(), outUserPoolClientID: env.pool.ClientID(),
			outStripeSecretARN: secretARN, outStateMachineARN: st.StateMachineARN,
		},
		// A stage that authorizes with an imported pool has no app client output.
		"Seatsaga-importedpool": {outApiURL: st.Endpoints.API + "/", outUserPoolID: env.pool.UserPoolID(), outStripeSecretARN: secretARN, outStateMachineARN: st.StateMachineARN},
	})
	defer env.cfn.Close()

	// The commands take credentials from the environment, as against AWS; the stand-ins
	// accept any.
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_REGION": "us-east-1",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		os.Setenv(k, v)
	}
	os.Unsetenv("AWS_PROFILE")
	return m.Run()
}

// endpoints are the flags that point `seats load` at the local stack: the services it calls.
func endpoints() []string {
	return []string{
		"--stage", "twin",
		"--dynamodb-endpoint", env.st.Endpoints.DynamoDB,
		"--cloudformation-endpoint", env.cfn.URL,
	}
}

// smokeEndpoints point `smoke` at the local stack: it also calls Cognito and Secrets Manager.
func smokeEndpoints() []string {
	return append(endpoints(),
		"--cognito-endpoint", env.cognito,
		"--secretsmanager-endpoint", env.st.Endpoints.AWS,
	)
}

// ops runs a command line and returns its output.
func ops(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, args, &out, &out)
	return out.String(), err
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seats.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// scanSeats returns every item of the twin's Seats table by key.
func scanSeats(t *testing.T) map[string]map[string]types.AttributeValue {
	t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	p := dynamodb.NewScanPaginator(env.st.DynamoDB, &dynamodb.ScanInput{
		TableName: aws.String(env.st.Names.Of(tables.SeatsTable)), ConsistentRead: aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			out[item[tables.AttrSeatKey].(*types.AttributeValueMemberS).Value] = item
		}
	}
	return out
}

func seatState(t *testing.T, eventID, seatID string) string {
	t.Helper()
	item := scanSeats(t)[reservation.SeatKey(eventID, seatID)]
	if item == nil {
		return ""
	}
	return item[tables.AttrSeatState].(*types.AttributeValueMemberS).Value
}

const concertFile = `{
  "eventId": "concert-twin",
  "opensAt": "2026-01-01T00:00:00Z",
  "closesAt": "2099-01-01T00:00:00Z",
  "seats": [
    {"seatId": "A-1-1", "priceMinor": 5000, "currency": "EUR"},
    {"seatId": "A-1-2", "priceMinor": 5000, "currency": "EUR"},
    {"seatId": "B-1-1", "priceMinor": 3500, "currency": "EUR"}
  ]
}`

func TestSeatsLoadCreatesTheEventAndASecondLoadChangesNothing(t *testing.T) {
	path := writeFile(t, concertFile)
	out, err := ops(t, append([]string{"seats", "load", "--file", path}, endpoints()...)...)
	if err != nil {
		t.Fatalf("first load: %v\n%s", err, out)
	}
	for _, want := range []string{"event concert-twin, 3 seats", "table Seatsaga-twin-Seats", "to create  3", "created 3 seats; 0 were already there"} {
		if !strings.Contains(out, want) {
			t.Errorf("first load output lacks %q:\n%s", want, out)
		}
	}
	before := scanSeats(t)
	for _, id := range []string{"A-1-1", "A-1-2", "B-1-1"} {
		if seatState(t, "concert-twin", id) != "AVAILABLE" {
			t.Errorf("seat %s not AVAILABLE after the load", id)
		}
	}

	out, err = ops(t, append([]string{"seats", "load", "--file", path}, endpoints()...)...)
	if err != nil {
		t.Fatalf("second load: %v\n%s", err, out)
	}
	for _, want := range []string{"to create  0", "unchanged  3", "created 0 seats; 3 were already there"} {
		if !strings.Contains(out, want) {
			t.Errorf("second load output lacks %q:\n%s", want, out)
		}
	}
	if after := scanSeats(t); !reflect.DeepEqual(after, before) {
		t.Errorf("the second load changed the table")
	}
}

func TestSeatsLoadDryRunWritesNothing(t *testing.T) {
	path := writeFile(t, strings.ReplaceAll(concertFile, "concert-twin", "concert-dry"))
	before := scanSeats(t)
	out, err := ops(t, append([]string{"seats", "load", "--dry-run", "--file", path}, endpoints()...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "to create  3") || !strings.Contains(out, "dry run: nothing written") {
		t.Errorf("output:\n%s", out)
	}
	if after := scanSeats(t); !reflect.DeepEqual(after, before) {
		t.Error("a dry run wrote to the table")
	}
}

// A bad file is refused whole, before any AWS call: even the good seats in it are not written.
func TestSeatsLoadRefusesABadFileAndWritesNothing(t *testing.T) {
	good := `{"seatId": "OK-1", "priceMinor": 5000, "currency": "EUR"},`
	for _, tc := range []struct {
		name string
		body string
		want string
	}{
		{"duplicate seat ids", `{"eventId": "bad-dup", "seats": [` + good + `
  {"seatId": "X1", "priceMinor": 100, "currency": "EUR"},
  {"seatId": "X1", "priceMinor": 100, "currency": "EUR"}]}`, `:3: seat "X1": seatId: named twice (first on line 2)`},
		{"bad currency", `{"eventId": "bad-currency", "seats": [` + good + `
  {"seatId": "X1", "priceMinor": 100, "currency": "EU"}]}`, `:2: seat "X1": currency: "EU"`},
		{"non-positive price", `{"eventId": "bad-price", "seats": [` + good + `
  {"seatId": "X1", "priceMinor": 0, "currency": "EUR"}]}`, `:2: seat "X1": priceMinor: must be a positive`},
		{"a price Stripe would refuse", `{"eventId": "bad-stripe-price", "seats": [` + good + `
  {"seatId": "X1", "priceMinor": 49, "currency": "EUR"}]}`, `:2: seat "X1": priceMinor: 49 is below Stripe's minimum charge in EUR`},
		{"closesAt before opensAt", `{"eventId": "bad-window", "opensAt": "2026-06-02T00:00:00Z",
  "closesAt": "2026-06-01T00:00:00Z", "seats": [{"seatId": "OK-1", "priceMinor": 5000, "currency": "EUR"}]}`, `:2: closesAt: 2026-06-01T00:00:00Z is not after opensAt`},
		{"unknown field", `{"eventId": "bad-field", "seats": [` + good + `
  {"seatId": "X1", "priceMinor": 100, "currency": "EUR", "section": "A"}]}`, `:2: seat "X1": unknown field "section"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.body)
			before := scanSeats(t)
			out, err := ops(t, append([]string{"seats", "load", "--file", path}, endpoints()...)...)
			if err == nil || !strings.Contains(err.Error(), path+tc.want) || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("err = %v, want one naming %q\n%s", err, path+tc.want, out)
			}
			if after := scanSeats(t); !reflect.DeepEqual(after, before) {
				t.Error("a bad file changed the table")
			}
			// The file is refused before anything is asked of AWS: with every endpoint
			// unreachable the answer is the same.
			_, err = ops(t, "seats", "load", "--file", path, "--region", "us-east-1",
				"--dynamodb-endpoint", "http://127.0.0.1:1", "--cloudformation-endpoint", "http://127.0.0.1:1")
			if err == nil || !strings.Contains(err.Error(), path+tc.want) {
				t.Errorf("with AWS unreachable: err = %v", err)
			}
		})
	}
}

func TestSeatsLoadWithATablePrefixNeedsNoStack(t *testing.T) {
	path := writeFile(t, strings.ReplaceAll(concertFile, "concert-twin", "concert-prefix"))
	out, err := ops(t, "seats", "load", "--file", path, "--table-prefix", twinStack+"-", "--dynamodb-endpoint", env.st.Endpoints.DynamoDB,
		"--cloudformation-endpoint", "http://127.0.0.1:1")
	if err != nil || !strings.Contains(out, "created 3 seats") {
		t.Fatalf("err = %v\n%s", err, out)
	}
}

func TestSeatsLoadNamesAStackThatDoesNotExist(t *testing.T) {
	path := writeFile(t, concertFile)
	args := append([]string{"seats", "load", "--file", path}, endpoints()...)
	args = append(args, "--stage", "nope")
	if _, err := ops(t, args...); err == nil || !strings.Contains(err.Error(), "no stack Seatsaga-nope in us-east-1") {
		t.Errorf("err = %v", err)
	}
}

// Each command has the flags of the services it calls and no others.
func TestSeatsLoadHasNoFlagsForServicesItDoesNotCall(t *testing.T) {
	path := writeFile(t, concertFile)
	for _, flag := range []string{"--cognito-endpoint", "--secretsmanager-endpoint"} {
		_, err := ops(t, append([]string{"seats", "load", "--file", path, flag, "http://127.0.0.1:1"}, endpoints()...)...)
		if err == nil || !strings.Contains(err.Error(), "flag provided but not defined") {
			t.Errorf("seats load %s: err = %v, want the flag refused", flag, err)
		}
	}
}

// The product reads the window the loader writes: a seat outside it is refused at admission.
func TestLoadedSaleWindowIsEnforcedByTheApi(t *testing.T) {
	path := writeFile(t, `{"eventId": "window-twin", "opensAt": "2098-01-01T00:00:00Z",
  "seats": [{"seatId": "W1", "priceMinor": 5000, "currency": "EUR"}]}`)
	if out, err := ops(t, append([]string{"seats", "load", "--file", path}, endpoints()...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	token, err := env.st.Token("window-buyer")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", env.st.Endpoints.API+"/events/window-twin/reservations",
		strings.NewReader(`{"seatIds":["W1"],"paymentMethod":"pm_card_visa"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", "window-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "not_on_sale") {
		t.Errorf("POST before the sale opens: %d %s, want 409 not_on_sale", resp.StatusCode, body)
	}
}

func TestSmokeBuysASeatEndToEndAndLinksTheExecution(t *testing.T) {
	args := append([]string{"smoke", "--stripe-api-base", env.st.Endpoints.Payments, "--timeout", "2m"}, smokeEndpoints()...)
	out, err := ops(t, args...)
	if err != nil {
		t.Fatalf("smoke: %v\n%s", err, out)
	}
	for _, want := range []string{
		"created test user seatsaga-smoke@example.com", "created seat smoke-", "CONFIRMED",
		"Stripe: PaymentIntent pi_", "succeeded, 100 eur received",
		"execution  arn:aws:states:us-east-1:000000000000:execution:" + stack.StateMachineName + ":r_",
		"console    https://us-east-1.console.aws.amazon.com/states/home?region=us-east-1#/v2/executions/details/arn:aws:states:us-east-1:000000000000:execution:",
		"smoke test passed: seat smoke-",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	seat := between(out, "created seat ", " of event")
	if got := seatState(t, "seatsaga-smoke", seat); got != "CONFIRMED" {
		t.Errorf("seat %s is %q in the table, want CONFIRMED", seat, got)
	}

	// A second run reuses the user and buys a new seat of its own.
	out, err = ops(t, args...)
	if err != nil {
		t.Fatalf("second smoke: %v\n%s", err, out)
	}
	if !strings.Contains(out, "reusing test user seatsaga-smoke@example.com") || !strings.Contains(out, "smoke test passed") {
		t.Errorf("second run output:\n%s", out)
	}
	if again := between(out, "created seat ", " of event"); again == seat {
		t.Errorf("the second run bought the first run's seat %s", seat)
	}
}

func TestSmokeBuysANamedSeat(t *testing.T) {
	path := writeFile(t, `{"eventId": "named-twin", "seats": [{"seatId": "N1", "priceMinor": 2500, "currency": "usd"}]}`)
	if out, err := ops(t, append([]string{"seats", "load", "--file", path}, endpoints()...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	args := append([]string{"smoke", "--event", "named-twin", "--seat", "N1", "--email", "named@example.com",
		"--stripe-api-base", env.st.Endpoints.Payments}, smokeEndpoints()...)
	out, err := ops(t, args...)
	if err != nil || !strings.Contains(out, "seat N1 of event named-twin sold to named@example.com for 2500 usd") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	if strings.Contains(out, "created seat") {
		t.Errorf("a named seat was bought, yet a seat was created:\n%s", out)
	}
}

// The smoke test pays with a test card: it refuses a live key, or the placeholder, before it
// creates a seat or books anything.
func TestSmokeRefusesAStageWithoutATestModeStripeKey(t *testing.T) {
	for _, tc := range []struct{ secret, want string }{
		{"live", "is a live-mode key"},
		{"placeholder", "is not a Stripe secret key"},
	} {
		t.Run(tc.secret, func(t *testing.T) {
			before := scanSeats(t)
			args := append([]string{"smoke", "--stripe-secret-arn", env.otherSecrets[tc.secret]}, smokeEndpoints()...)
			out, err := ops(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q\n%s", err, tc.want, out)
			}
			if after := scanSeats(t); !reflect.DeepEqual(after, before) {
				t.Error("the refused smoke test wrote a seat")
			}
		})
	}
}

func TestSmokeNamesTheOutputAStageLacks(t *testing.T) {
	args := append(smokeEndpoints(), "--stack", "Seatsaga-importedpool")
	_, err := ops(t, append([]string{"smoke"}, args...)...)
	if err == nil || !strings.Contains(err.Error(), "stack Seatsaga-importedpool has no UserPoolClientId output: pass --client-id") {
		t.Errorf("err = %v", err)
	}
}

func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, end)
	return v
}

// fakeCloudFormation answers DescribeStacks (the query protocol) for fixed stacks.
type fakeCloudFormation struct {
	*httptest.Server
}

func newFakeCloudFormation(stacks map[string]map[string]string) *fakeCloudFormation {
	return &fakeCloudFormation{httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		name := r.Form.Get("StackName")
		outputs, ok := stacks[name]
		w.Header().Set("Content-Type", "text/xml")
		if r.Form.Get("Action") != "DescribeStacks" || !ok {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id %s does not exist</Message></Error><RequestId>1</RequestId></ErrorResponse>`, name)
			return
		}
		var members strings.Builder
		for k, v := range outputs {
			fmt.Fprintf(&members, "<member><OutputKey>%s</OutputKey><OutputValue>%s</OutputValue></member>", k, xmlEscape(v))
		}
		fmt.Fprintf(w, `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member>
<StackName>%s</StackName><StackId>arn:aws:cloudformation:us-east-1:000000000000:stack/%s/1</StackId>
<CreationTime>2026-01-01T00:00:00Z</CreationTime><StackStatus>UPDATE_COMPLETE</StackStatus>
<Outputs>%s</Outputs></member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></DescribeStacksResponse>`,
			name, name, members.String())
	}))}
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
