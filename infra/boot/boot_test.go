package boot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/infra/build"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/modroot"
	"github.com/seatsaga/seatsaga/internal/obs"
	"github.com/seatsaga/seatsaga/internal/saga"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

// stackName is the stack `cdk synth` names for the default stage; its tables are named under it.
const stackName = "Seatsaga-dev"

// A function of the synthesized template: what the template gives it and where its asset is.
type templateFunction struct {
	name     string
	logical  string
	binary   string
	env      map[string]any
	memoryMB int
	timeout  time.Duration
	// logging is the function's LoggingConfig.
	logging map[string]any
}

// lambdaLoggingEnv returns the variables Lambda itself sets in a function's environment from
// its LoggingConfig, which are not in the template's Environment: AWS_LAMBDA_LOG_FORMAT from
// LogFormat and, for the JSON format only, AWS_LAMBDA_LOG_LEVEL from ApplicationLogLevel
// (Lambda's default, INFO, when the config names none).
func (f templateFunction) lambdaLoggingEnv() map[string]string {
	env := map[string]string{}
	format, _ := f.logging["LogFormat"].(string)
	if format == "" {
		return env
	}
	env["AWS_LAMBDA_LOG_FORMAT"] = format
	if format == "JSON" {
		level, _ := f.logging["ApplicationLogLevel"].(string)
		if level == "" {
			level = "INFO"
		}
		env["AWS_LAMBDA_LOG_LEVEL"] = level
	}
	return env
}

// synthesized is the template both tests read: building and synthesizing takes a minute.
var synthesized struct {
	once      sync.Once
	resources map[string]map[string]any
	err       error
}

// TestMain removes the synthesis directory the tests shared.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "seatsaga-boot-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	synthDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var synthDir string

// template returns the synthesized template's resources, synthesizing on first use.
func template(t *testing.T) map[string]map[string]any {
	t.Helper()
	synthesized.once.Do(func() {
		root, err := modroot.FromWorkingDir()
		if err != nil {
			synthesized.err = err
			return
		}
		synthesized.resources, synthesized.err = synthesize(root, synthDir)
	})
	if synthesized.err != nil {
		t.Fatal(synthesized.err)
	}
	return synthesized.resources
}

// synthesize builds every function for this machine and runs the pinned CDK CLI on the app,
// exactly as `make synth-check` does except for the binaries' architecture (assetDir is the
// app's own context value for prebuilt assets). It returns the template's resources.
func synthesize(root, dir string) (map[string]map[string]any, error) {
	tools := os.Getenv("SEATSAGA_TOOLS")
	if tools == "" {
		return nil, errors.New("SEATSAGA_TOOLS is not set: run the suite through `make test`, which installs the CDK CLI")
	}
	assets, out := filepath.Join(dir, "assets"), filepath.Join(dir, "cdk.out")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := build.Lambdas(ctx, build.Options{ModuleRoot: root, OutDir: assets, Arch: runtime.GOARCH}); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(tools, "node_modules", ".bin", "cdk"),
		"synth", "--quiet", "-c", "assetDir="+assets, "-o", out)
	cmd.Dir = root
	// No AWS account: the app synthesizes an environment-agnostic stack, as in CI.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") || strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") ||
			strings.HasPrefix(kv, "AWS_SESSION_TOKEN=") || strings.HasPrefix(kv, "AWS_PROFILE=")
	})
	cmd.Env = append(cmd.Env, "AWS_EC2_METADATA_DISABLED=true", "CDK_DISABLE_CLI_TELEMETRY=true",
		"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20")
	if raw, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cdk synth: %w\n%s", err, raw)
	}
	raw, err := os.ReadFile(filepath.Join(out, stackName+".template.json"))
	if err != nil {
		return nil, err
	}
	var tpl struct {
		Resources map[string]map[string]any
	}
	if err := json.Unmarshal(raw, &tpl); err != nil {
		return nil, err
	}
	for _, r := range tpl.Resources {
		if md, _ := r["Metadata"].(map[string]any); md != nil {
			if p, ok := md["aws:asset:path"].(string); ok {
				md["aws:asset:path"] = filepath.Join(out, p)
			}
		}
	}
	return tpl.Resources, nil
}

// functionsOf lists the template's Lambda functions, each named by its construct path
// (<stack>/Functions/<Name>/Resource) and located by its staged asset.
func functionsOf(t *testing.T, resources map[string]map[string]any) []templateFunction {
	t.Helper()
	var out []templateFunction
	for logical, r := range resources {
		if r["Type"] != "AWS::Lambda::Function" {
			continue
		}
		md, _ := r["Metadata"].(map[string]any)
		path, _ := md["aws:cdk:path"].(string)
		parts := strings.Split(path, "/")
		if len(parts) != 4 || parts[1] != "Functions" {
			t.Fatalf("function %s at %q is not one of the stack's functions", logical, path)
		}
		props, _ := r["Properties"].(map[string]any)
		envBlock, _ := props["Environment"].(map[string]any)
		vars, _ := envBlock["Variables"].(map[string]any)
		logging, _ := props["LoggingConfig"].(map[string]any)
		memory, _ := props["MemorySize"].(float64)
		timeout, _ := props["Timeout"].(float64)
		asset, _ := md["aws:asset:path"].(string)
		out = append(out, templateFunction{
			name: strings.ToLower(parts[2][:1]) + parts[2][1:], logical: logical,
			binary: filepath.Join(asset, "bootstrap"), env: vars,
			memoryMB: int(memory), timeout: time.Duration(timeout) * time.Second, logging: logging,
		})
	}
	slices.SortFunc(out, func(a, b templateFunction) int { return strings.Compare(a.name, b.name) })
	return out
}

// twinResolver resolves the template's references against the local stack: the pseudo
// parameters of the stack's name and Region, and Ref or Fn::GetAtt of the resources a
// function's environment names (the secrets, the state machine, the event bus).
type twinResolver struct {
	st        *stack.Stack
	resources map[string]map[string]any
}

func (r twinResolver) value(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok {
			return r.ref(ref)
		}
		if att, ok := x["Fn::GetAtt"].([]any); ok && len(att) == 2 {
			return r.getAtt(fmt.Sprint(att[0]), fmt.Sprint(att[1]))
		}
		if join, ok := x["Fn::Join"].([]any); ok && len(join) == 2 {
			parts, _ := join[1].([]any)
			var out []string
			for _, p := range parts {
				s, err := r.value(p)
				if err != nil {
					return "", err
				}
				out = append(out, s)
			}
			return strings.Join(out, fmt.Sprint(join[0])), nil
		}
	}
	return "", fmt.Errorf("the twin cannot resolve %v", v)
}

func (r twinResolver) ref(name string) (string, error) {
	switch name {
	case "AWS::StackName":
		return stackName, nil
	case "AWS::Region":
		return stack.Region, nil
	case "AWS::AccountId":
		return stack.AccountID, nil
	case "AWS::Partition":
		return "aws", nil
	}
	res, ok := r.resources[name]
	if !ok {
		return "", fmt.Errorf("Ref to %s, which the template does not declare", name)
	}
	md, _ := res["Metadata"].(map[string]any)
	path, _ := md["aws:cdk:path"].(string)
	switch res["Type"] {
	case "AWS::SecretsManager::Secret":
		for _, secret := range []string{deploy.StripeSecretKey, deploy.StripeWebhookSecret} {
			if strings.Contains(path, "/Secrets/"+secret+"/") {
				return r.st.SecretARN(secret), nil
			}
		}
	case "AWS::StepFunctions::StateMachine":
		return r.st.StateMachineARN, nil
	case "AWS::Events::EventBus":
		return stack.EventBusName, nil
	}
	return "", fmt.Errorf("Ref to %s (%v at %s) has no local counterpart", name, res["Type"], path)
}

func (r twinResolver) getAtt(name, attr string) (string, error) {
	res := r.resources[name]
	switch {
	case res["Type"] == "AWS::Events::EventBus" && attr == "Name":
		return stack.EventBusName, nil
	case res["Type"] == "AWS::StepFunctions::StateMachine" && attr == "Name":
		return stack.StateMachineName, nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s (%v) has no local counterpart", name, attr, res["Type"])
}

// logs collects every process's output, shown when the test fails, and keeps each
// function's stdout lines apart for the checks of what it logged.
type logs struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	stdout map[string]*lineBuffer
}

func (l *logs) writer(name string) io.Writer { return &prefixed{logs: l, name: name} }

// stdoutOf returns the buffer of the named function's stdout lines.
func (l *logs) stdoutOf(name string) *lineBuffer {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stdout == nil {
		l.stdout = map[string]*lineBuffer{}
	}
	if l.stdout[name] == nil {
		l.stdout[name] = &lineBuffer{}
	}
	return l.stdout[name]
}

// lineBuffer splits what a process writes into lines, however its writes fall: a line is
// kept once its newline arrives, so a line cut off when the process is stopped is not.
type lineBuffer struct {
	mu      sync.Mutex
	partial []byte
	lines   [][]byte
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		if line := bytes.TrimSpace(b.partial[:i]); len(line) > 0 {
			b.lines = append(b.lines, bytes.Clone(line))
		}
		b.partial = b.partial[i+1:]
	}
	return len(p), nil
}

// Lines returns the complete lines written so far.
func (b *lineBuffer) Lines() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.lines)
}

// prefixed writes a function's output to the shared log, each line prefixed with its name.
type prefixed struct {
	logs *logs
	name string
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.logs.mu.Lock()
	defer p.logs.mu.Unlock()
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			p.logs.buf.WriteString(p.name + ": " + line)
		}
	}
	return len(b), nil
}

// Every function the template deploys starts from its real binary with exactly the template's
// environment (references resolved against the twin; AWS's own variables, the function's
// credentials and AWS_ENDPOINT_URL added as Lambda and the twin give them), reaches the runtime
// loop, and serves real events: a booking through the API, the saga and the webhook; a declined
// payment through compensation; a reconciliation; a sweep; and the outbox through the relay to
// the consumer; and a booking whose start Step Functions throttled through the starter. None of
// their calls is refused.
func TestEveryTemplateFunctionBootsWithTheTemplatesEnvironmentAndServesARealEvent(t *testing.T) {
	resources := template(t)
	fns := functionsOf(t, resources)
	if got, want := names(fns), deploy.Names(); !slices.Equal(got, want) {
		t.Fatalf("the template deploys %v, the spec %v", got, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Two starts at once, then one every 20 seconds: the third booking's start is throttled,
	// queued, and made by the starter from the Admissions stream.
	quotas := stepfunctions.DefaultQuotas()
	quotas.API["StartExecution"] = throttle.Limit{Size: 2, RefillPerSecond: 0.05}
	st, err := stack.Start(ctx, stack.Config{TablePrefix: stackName + "-", SweepInterval: -1, StepFunctionsQuotas: &quotas})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	out := &logs{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("function output:\n%s", out.buf.String())
		}
	})
	r := twinResolver{st: st, resources: resources}

	var procs []*lambdahost.Process
	for _, fn := range fns {
		env := map[string]string{}
		for k, v := range fn.env {
			s, err := r.value(v)
			if err != nil {
				t.Fatalf("%s: %s: %v", fn.name, k, err)
			}
			env[k] = s
		}
		// The twin gives the function in process the same variables, the payment simulator's
		// address aside, and every reference resolves to the same resource; literal settings
		// (the stage's name, the hold) are the template's own.
		local := st.FunctionEnvironment(fn.name)
		delete(local, config.EnvStripeAPIBase)
		if got, want := slices.Sorted(maps.Keys(env)), slices.Sorted(maps.Keys(local)); !slices.Equal(got, want) {
			t.Errorf("%s: the template's variables %v, the twin's %v", fn.name, got, want)
		}
		for k, v := range fn.env {
			if _, literal := v.(string); !literal && env[k] != local[k] {
				t.Errorf("%s: %s resolves to %q, the twin gives %q", fn.name, k, env[k], local[k])
			}
		}

		// Lambda gives the binary its log format and level from the LoggingConfig; the
		// lines checked below are written under them.
		if got := fn.lambdaLoggingEnv(); got["AWS_LAMBDA_LOG_FORMAT"] != "JSON" || got["AWS_LAMBDA_LOG_LEVEL"] == "" {
			t.Errorf("%s: the template's LoggingConfig %v gives the binary %v, want the JSON format and a level", fn.name, fn.logging, got)
		}
		p, err := startFunction(ctx, st, fn, env, out)
		if err != nil {
			t.Fatalf("%s does not reach the runtime loop with the template's environment: %v", fn.name, err)
		}
		t.Cleanup(func() { _ = p.Stop() })
		st.Lambdas.RegisterProcess(fn.name, p, lambdahost.FunctionConfig{Timeout: fn.timeout})
		procs = append(procs, p)
	}

	if _, err := st.SeedEvent(ctx, "boot", 3); err != nil {
		t.Fatal(err)
	}
	paid := book(ctx, t, st, "boot", "S1", stripesim.PaymentMethodVisa)
	waitFor(ctx, t, st, paid, "CONFIRMED", "PAID")
	declined := book(ctx, t, st, "boot", "S2", stripesim.PaymentMethodDeclined)
	waitFor(ctx, t, st, declined, "RELEASED", "FAILED")
	queued := book(ctx, t, st, "boot", "S3", stripesim.PaymentMethodVisa)
	waitFor(ctx, t, st, queued, "CONFIRMED", "PAID")
	// The binaries the template deploys end both executions as the definition's contract
	// says: the sale Confirmed, the decline a business ending that succeeds and names itself.
	for id, want := range map[string]string{paid: saga.EndConfirmed, declined: saga.EndPaymentDeclined} {
		if e := endingOf(ctx, t, st, id); e.Outcome != want || e.NeedsPerson {
			t.Errorf("execution %s ended %+v, want %s", id, e, want)
		}
	}

	// Reconcile is entered only when a payment's outcome is unknown: hand it the settled
	// booking's execution input, as the state machine would, and it must find nothing to do.
	desc, err := st.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(st.ExecutionARN(paid))})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(stack.FnReconcile), Payload: []byte(aws.ToString(desc.Input))})
	if err != nil || res.FunctionError != nil {
		t.Fatalf("reconcile: %v %s %s", err, aws.ToString(res.FunctionError), res.Payload)
	}
	if err := st.Sweep(); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if err := st.Settle(ctx, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if len(st.Bus.Entries()) == 0 {
		t.Error("the relay published nothing")
	}
	invocations := map[string]int64{}
	for _, fn := range fns {
		s := st.Lambdas.Stats(fn.name)
		invocations[fn.name] = s.Invocations
		if s.Invocations == 0 {
			t.Errorf("%s served no event", fn.name)
		}
		if s.Errors > 0 && fn.name != stack.FnAuthorize {
			// Authorize fails the declined booking's payment on purpose; nothing else may fail.
			t.Errorf("%s: %d of %d invocations failed", fn.name, s.Errors, s.Invocations)
		}
	}
	if d := st.Gate.Denials(); len(d) > 0 {
		t.Errorf("the gate refused calls the template's grants should allow: %+v", d)
	}
	if v, err := st.Check(ctx); err != nil || !v.OK() {
		t.Errorf("invariants: %v\n%s", err, v)
	}

	// Stopped, every process's output is drained, and what it logged is checked whole.
	for _, p := range procs {
		_ = p.Stop()
	}
	checkLogs(t, fns, invocations, out)
}

// sagaSteps are the functions whose every invocation acts on one reservation.
var sagaSteps = stack.SagaFunctions

// checkLogs holds every line each function wrote to stdout during the events to the format
// operators query by (obs.CheckInvocationLine: EMF metric lines aside, JSON with the level, a
// UTC timestamp, the message, the service, cold_start, the request id and the X-Ray trace id),
// and each process's invocations to their own ids: one trace id per request id, none shared by
// two invocations (the host sends each invocation a header of its own, so a repeat is a stale
// value), the cold start on the first invocation only, and a saga step's every line naming its
// reservation. invocations counts each function's invocations, as the host served them.
func checkLogs(t *testing.T, fns []templateFunction, invocations map[string]int64, out *logs) {
	t.Helper()
	warm := false
	for _, fn := range fns {
		var order []string // request ids, in the order of their first line
		trace, cold := map[string]string{}, map[string]bool{}
		for _, line := range out.stdoutOf(fn.name).Lines() {
			if err := obs.CheckInvocationLine(line); err != nil {
				t.Errorf("%s wrote a line operators cannot query by: %v\n%s", fn.name, err, line)
				continue
			}
			if obs.IsMetricLine(line) {
				continue
			}
			var m struct {
				Service       string `json:"service"`
				ColdStart     bool   `json:"cold_start"`
				RequestID     string `json:"requestId"`
				TraceID       string `json:"xray_trace_id"`
				ReservationID string `json:"reservationId"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			if m.Service != fn.name {
				t.Errorf("%s logs as service %q\n%s", fn.name, m.Service, line)
			}
			if slices.Contains(sagaSteps, fn.name) && m.ReservationID == "" {
				t.Errorf("%s logged a line without the reservation it acts on\n%s", fn.name, line)
			}
			first, seen := trace[m.RequestID]
			switch {
			case !seen:
				order = append(order, m.RequestID)
				trace[m.RequestID], cold[m.RequestID] = m.TraceID, m.ColdStart
			case first != m.TraceID:
				t.Errorf("%s: invocation %s logs trace ids %s and %s", fn.name, m.RequestID, first, m.TraceID)
			case cold[m.RequestID] != m.ColdStart:
				t.Errorf("%s: invocation %s is and is not the cold start\n%s", fn.name, m.RequestID, line)
			}
		}
		byTrace := map[string]string{}
		for i, req := range order {
			if other, dup := byTrace[trace[req]]; dup {
				t.Errorf("%s: invocations %s and %s log the same trace id %s", fn.name, other, req, trace[req])
			}
			byTrace[trace[req]] = req
			if cold[req] && i > 0 {
				t.Errorf("%s: invocation %s, not the process's first, logs cold_start true", fn.name, req)
			}
			warm = warm || !cold[req]
		}
		// When every invocation logged, the first one logged is the process's first.
		if len(order) > 0 && int64(len(order)) == invocations[fn.name] && !cold[order[0]] {
			t.Errorf("%s: the first of its %d invocations, %s, logs cold_start false", fn.name, len(order), order[0])
		}
		t.Logf("%s: %d of %d invocations logged", fn.name, len(order), invocations[fn.name])
	}
	if !warm {
		t.Error("no process logged an invocation after its first: cold_start false went unchecked")
	}
}

// The control: the same start with one variable of the template left out fails as Lambda would
// report it, an init error before the runtime loop.
func TestAFunctionMissingATemplateVariableDoesNotBoot(t *testing.T) {
	resources := template(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Config{TablePrefix: stackName + "-", SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r := twinResolver{st: st, resources: resources}
	for _, fn := range functionsOf(t, resources) {
		if fn.name != stack.FnConfirm {
			continue
		}
		env := map[string]string{}
		for k, v := range fn.env {
			var err error
			if env[k], err = r.value(v); err != nil {
				t.Fatal(err)
			}
		}
		delete(env, config.EnvStripeSecretARN)
		p, err := startFunction(ctx, st, fn, env, &logs{})
		var ie *lambdahost.InitError
		if !errors.As(err, &ie) {
			if p != nil {
				_ = p.Stop()
			}
			t.Fatalf("confirm without its Stripe key's ARN: %v, want an init error", err)
		}
		if !strings.Contains(ie.Stdout+ie.Stderr, config.EnvStripeSecretARN) {
			t.Errorf("the init error does not name the missing variable:\n%s", ie)
		}
		return
	}
	t.Fatal("the template has no confirm function")
}

// startFunction starts a function's binary as Lambda would: the given environment, Lambda's
// own variables, the function's credentials, and the twin's gate as every AWS endpoint and the
// payment simulator as Stripe's.
func startFunction(ctx context.Context, st *stack.Stack, fn templateFunction, env map[string]string, out *logs) (*lambdahost.Process, error) {
	creds := stack.FunctionCredentials(fn.name)
	env = maps.Clone(env)
	env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"] = creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken
	env["AWS_ENDPOINT_URL"] = st.Endpoints.AWS
	env[config.EnvStripeAPIBase] = st.Endpoints.Payments
	// What Lambda derives from the function's LoggingConfig; the host sends each invocation's
	// trace header (Lambda-Runtime-Trace-Id) itself.
	maps.Copy(env, fn.lambdaLoggingEnv())
	return lambdahost.StartProcess(ctx, lambdahost.ProcessOptions{
		Name: fn.name, Path: fn.binary, Env: env, Timeout: fn.timeout, MemoryMB: fn.memoryMB,
		Region: stack.Region, AccountID: stack.AccountID,
		Stdout: io.MultiWriter(out.writer(fn.name), out.stdoutOf(fn.name)), Stderr: out.writer(fn.name),
	})
}

func names(fns []templateFunction) []string {
	var out []string
	for _, f := range fns {
		out = append(out, f.name)
	}
	return out
}

// book asks the API for one seat with the given payment method and returns the reservation id.
func book(ctx context.Context, t *testing.T, st *stack.Stack, eventID, seat, method string) string {
	t.Helper()
	token, err := st.Token("boot-" + seat)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"seatIds":[%q],"amount":5000,"currency":"eur","paymentMethod":%q}`, seat, method)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, st.Endpoints.API+"/events/"+eventID+"/reservations", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", "boot-"+seat)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST %s: %d %s", seat, resp.StatusCode, raw)
	}
	var created struct {
		ReservationID string `json:"reservationId"`
	}
	if err := json.Unmarshal(raw, &created); err != nil {
		t.Fatal(err)
	}
	return created.ReservationID
}

// endingOf waits for the reservation's execution to end and returns how it ended, as every
// reader of executions classifies it.
func endingOf(ctx context.Context, t *testing.T, st *stack.Stack, id string) saga.Ending {
	t.Helper()
	for {
		d, err := st.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(st.ExecutionARN(id))})
		if err != nil {
			t.Fatalf("describe %s: %v", id, err)
		}
		if e := saga.EndingOf(string(d.Status), aws.ToString(d.Output), aws.ToString(d.Error)); e.Finished {
			return e
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the execution of %s never ended", id)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitFor polls the API until the reservation is in the given states.
func waitFor(ctx context.Context, t *testing.T, st *stack.Stack, id, status, payment string) {
	t.Helper()
	store, err := inventory.New(inventory.Config{Client: st.DynamoDB, Names: st.Names, Now: st.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for {
		r, err := store.Get(ctx, id)
		if err == nil {
			last = fmt.Sprintf("%s/%s", r.Inventory, r.Payment)
			if string(r.Inventory) == status && string(r.Payment) == payment {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never reached %s/%s (last %s)", id, status, payment, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
