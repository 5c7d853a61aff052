// Package asl interprets Amazon States Language state machines (the JSONPath
// query language) for local runs and tests.
//
// Parse validates a definition and names every problem with its state and an
// AWS-style code (MISSING_TRANSITION_TARGET, UNREACHABLE_STATE,
// INVALID_JSON_PATH, INVALID_CHOICE_RULE, SCHEMA_VALIDATION_FAILED, ...).
// Engine.Start runs an execution: Pass, Task, Choice, Wait, Succeed, Fail,
// Parallel and inline Map states; InputPath, Parameters (paths, the context
// object and intrinsic functions), ResultSelector, ResultPath and OutputPath in
// the specification's order; Retry with backoff, MaxDelaySeconds and full
// jitter; Catch; the predefined errors (States.ALL does not match
// States.Runtime or States.DataLimitExceeded; States.TaskFailed does not match
// States.Timeout); task, heartbeat and execution timeouts; and the history
// events of the Step Functions API.
//
// Task resources are Lambda function ARNs, arn:aws:states:::lambda:invoke and
// arn:aws:states:::lambda:invoke.waitForTaskToken, invoked through an Invoker
// (FuncInvoker in process, lambdainvoke over the Lambda API). Any other
// resource runs only when a TaskMocker (a Step Functions Local test case)
// mocks it. JSONata, Distributed Map, activities and other service
// integrations are out of scope.
//
// Time comes from an injected clock.Clock: waits, retry intervals, heartbeats
// and timeouts are clock timers, never polling loops. An execution waiting on a
// task token at its top level holds no goroutine: it is a token-map entry plus
// its timers, resumed by SendTaskSuccess/Failure, a timer or a stop.
package asl
