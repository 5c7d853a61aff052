package stack

import (
	"time"

	"github.com/seatsaga/seatsaga/internal/alarms"
	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/config"
	"github.com/seatsaga/seatsaga/internal/emf"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/twin/apigateway"
	"github.com/seatsaga/seatsaga/internal/twin/asl"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stepfunctions"
)

// APIName is the local REST API's name, the value of the ApiName dimension of its metrics.
// The CDK app names each stack's API "<stack name>-api" (infra/stack/api.go); the local stack's
// is named the same way.
const APIName = "seatsaga-local-api"

// APIStage is the stage the local API serves, API Gateway's Stage dimension.
const APIStage = "local"

// AlarmSettings are what the deployment's alarm set depends on, locally: the CDK app's
// functions and queues, the API, the configured thresholds and the sweeper's period. A stack
// whose sweeper ticker is disabled is judged as if it ran every minute: its heartbeat alarm
// then fires, as it would on AWS with the schedule turned off.
func (st *Stack) AlarmSettings() alarms.Settings {
	every := st.cfg.SweepInterval
	if every <= 0 {
		every = time.Minute
	}
	return alarms.Deployed(st.AppConfig.MetricsNamespace, st.cfg.Thresholds, every)
}

// alarmDimension is the local value of a subject's dimension.
func (st *Stack) alarmDimension(s alarms.Subject) string {
	switch s.Kind {
	case alarms.StateMachine:
		return st.StateMachineARN
	case alarms.RestAPI:
		return APIName
	}
	// Functions and queues are named locally by their deploy names.
	return s.Name
}

// startAlarms evaluates the deployment's alarms over the stack's metrics every minute of the
// stack's clock (more often if a period is shorter), from now on.
func (st *Stack) startAlarms() {
	defs := alarms.Definitions(st.AlarmSettings())
	every := cloudwatch.DefaultEvaluationInterval
	for _, a := range defs {
		if a.Metric.Period > 0 && a.Metric.Period < every {
			every = a.Metric.Period
		}
	}
	st.Alarms = cloudwatch.NewEvaluator(cloudwatch.EvaluatorOptions{
		Store: st.CloudWatch, Clock: st.Clock, Alarms: defs, Dimension: st.alarmDimension,
		Every: every, Logger: st.log,
	})
	st.Alarms.Start()
	st.onClose(func() error { st.Alarms.Stop(); return nil })
}

// put records one data point of the twin's own AWS metrics, stamped now on the stack's clock,
// under each dimension set.
func (st *Stack) put(namespace, name string, value float64, unit string, at time.Time, dimSets ...map[string]string) {
	for _, dims := range dimSets {
		st.CloudWatch.Put(cloudwatch.Datum{Namespace: namespace, Name: name, Dimensions: dims, Value: value, Unit: unit, Time: at})
	}
}

// observeInvocation publishes what Lambda publishes per invocation request: Invocations,
// Errors (0 or 1 per run) and Duration per run, Throttles per refused request, per function
// and across all functions (no dimension).
func (st *Stack) observeInvocation(r lambdahost.Report) {
	now := st.Clock.Now()
	sets := []map[string]string{{"FunctionName": r.Function}, nil}
	if r.Throttled {
		st.put(alarms.Lambda, "Throttles", 1, "Count", now, sets...)
	}
	if !r.Invoked {
		return
	}
	st.put(alarms.Lambda, "Invocations", 1, "Count", now, sets...)
	st.put(alarms.Lambda, "Errors", boolValue(r.Error), "Count", now, sets...)
	st.put(alarms.Lambda, "Duration", milliseconds(r.Duration), "Milliseconds", now, sets...)
}

// executionMetrics names the AWS/States metric of each way an execution closes.
var executionMetrics = map[string]string{
	asl.StatusRunning:   "ExecutionsStarted",
	asl.StatusSucceeded: "ExecutionsSucceeded",
	asl.StatusFailed:    "ExecutionsFailed",
	asl.StatusTimedOut:  "ExecutionsTimedOut",
	asl.StatusAborted:   "ExecutionsAborted",
}

// observeExecution publishes what Step Functions publishes per execution of the state
// machine: ExecutionsStarted when it starts; when it closes, the count of its outcome and
// ExecutionTime, from start to close on the stack's clock. The local engine throttles
// nothing, so ExecutionThrottled is never published.
func (st *Stack) observeExecution(ev stepfunctions.ExecutionEvent) {
	name, ok := executionMetrics[ev.Status]
	if !ok {
		return
	}
	dims := map[string]string{"StateMachineArn": ev.StateMachineARN}
	if ev.Status == asl.StatusRunning {
		st.put(alarms.States, name, 1, "Count", ev.Start, dims)
		return
	}
	st.put(alarms.States, name, 1, "Count", ev.Stop, dims)
	st.put(alarms.States, "ExecutionTime", milliseconds(ev.Stop.Sub(ev.Start)), "Milliseconds", ev.Stop, dims)
}

// observeRequest publishes what API Gateway publishes per request of the REST API: Count,
// 4XXError and 5XXError (1 or 0 each) and Latency, per API and per API and stage.
func (st *Stack) observeRequest(r apigateway.Request) {
	st.usage.observeRequest(r)
	now := st.Clock.Now()
	sets := []map[string]string{{"ApiName": APIName}, {"ApiName": APIName, "Stage": APIStage}}
	st.put(alarms.APIGateway, "Count", 1, "Count", now, sets...)
	st.put(alarms.APIGateway, "4XXError", boolValue(r.Status >= 400 && r.Status < 500), "Count", now, sets...)
	st.put(alarms.APIGateway, "5XXError", boolValue(r.Status >= 500), "Count", now, sets...)
	st.put(alarms.APIGateway, "Latency", milliseconds(r.Latency), "Milliseconds", now, sets...)
}

// functionMetrics is the recorder a function runs with locally: the EMF its Lambda writes to
// stdout (app.Metrics), read by the stack's CloudWatch as CloudWatch Logs reads it, and the
// stack's own counts, which the summaries read.
func (st *Stack) functionMetrics(function string, env map[string]string) metrics.Recorder {
	cfg := config.Config{MetricsNamespace: config.DefaultMetricsNamespace}
	if c, err := config.FromLookup(config.MapLookup(env)); err == nil {
		// A configuration error is the function's to report, as it builds from the same one.
		cfg = c
	}
	log := st.log.With("function", function)
	logs := cloudwatch.NewEMFWriter(st.CloudWatch, func(line []byte, err error) {
		log.Warn("stack: CloudWatch Logs would reject the function's EMF line", "error", err.Error())
	})
	return teeRecorder{st.Metrics, app.Metrics(cfg, function, st.countedMetricLog(function, logs), emf.WithClock(st.Clock.Now),
		emf.WithErrorHandler(func(err error) { log.Warn("stack: the function's metrics were not written", "error", err.Error()) }))}
}

// teeRecorder records every count and gauge in each of its recorders.
type teeRecorder []metrics.Recorder

// Count implements metrics.Recorder.
func (t teeRecorder) Count(name string, value int64, dims ...metrics.Dim) {
	for _, r := range t {
		r.Count(name, value, dims...)
	}
}

// Gauge implements metrics.Recorder.
func (t teeRecorder) Gauge(name string, value float64, unit metrics.Unit, dims ...metrics.Dim) {
	for _, r := range t {
		r.Gauge(name, value, unit, dims...)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
