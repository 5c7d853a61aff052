package saga

import (
	"encoding/json"
	"strings"
)

// How an execution of statemachine/reservation.asl.json ends. A business ending (the buyer
// lost the race, the card was declined, the customer canceled, the hold expired, a late payment
// was voided, the capture was refused) is a normal result of a sale: it is a Succeed state,
// and the execution's output names it. Only an execution a person must look at fails: "Needs
// reconciliation", "Claim failed", an error no Catch handles, the execution's TimeoutSeconds.
// So the ExecutionsFailed alarm and a red execution in the console mean exactly that.
//
// The output of a business ending is a Verdict: {"Error": <one of BusinessOutcomes>, "Cause":
// <a sentence>} at its top level (and, after a compensation, what it did under
// "compensation"). The output of "Confirmed" has no top-level "Error". EndingOf reads both
// shapes, and every reader of finished executions goes through it.

// Ending outcomes: "Confirmed", the business outcomes (the names the Fail states used to carry,
// so dashboards and searches keep their words), and the names of the incidents.
const (
	EndConfirmed = "Confirmed"

	EndSeatUnavailable        = ErrSeatUnavailable
	EndPaymentDeclined        = ErrPaymentDeclined
	EndCustomerCanceled       = ErrCustomerCanceled
	EndHoldExpired            = ErrHoldExpired
	EndVoidedAfterLatePayment = "VoidedAfterLatePayment"
	EndCaptureFailed          = ErrCaptureFailed

	// EndNeedsReconciliation, EndClaimFailed and EndInvalidRequest are the errors of the
	// definition's Fail states. An invalid request is one: the API validates every input, so
	// a claim that refuses one means two parts of the system disagree.
	EndNeedsReconciliation = "NeedsReconciliation"
	EndClaimFailed         = "ClaimFailed"
	EndInvalidRequest      = ErrInvalidRequest
	// EndTimedOut and EndAborted name an execution that hit the definition's TimeoutSeconds or
	// was stopped; their error (States.Timeout, a StopExecution's own) says less than the status.
	EndTimedOut = "TimedOut"
	EndAborted  = "Aborted"
)

// businessEnding is one business outcome: its name and the sentence a Succeed state's output
// carries as Cause when the step that reached it knows no better one (a compensation, the
// reconcile step). The compensation states of the definition spell the same sentences in
// their ResultSelector; TestBusinessEndingsOfTheDefinition checks they agree.
type businessEnding struct {
	name, cause string
}

// businessEndings lists every business outcome once.
var businessEndings = []businessEnding{
	{EndSeatUnavailable, "Another buyer holds at least one of the seats; nothing was held and no payment was created."},
	{EndPaymentDeclined, "The payment failed; the seats were released."},
	{EndCustomerCanceled, "The customer canceled; the payment was voided or refunded and the seats released."},
	{EndHoldExpired, "The hold lapsed before the payment was authorized; the seats were released."},
	{EndVoidedAfterLatePayment, "The payment arrived after the hold lapsed; it was voided and the customer notified."},
	{EndCaptureFailed, "The capture was refused; the seats were released and the customer notified."},
}

// BusinessOutcomes are the names a business ending's output carries as its Error.
func BusinessOutcomes() []string {
	out := make([]string, len(businessEndings))
	for i, b := range businessEndings {
		out[i] = b.name
	}
	return out
}

// VerdictOf returns the Verdict of a business outcome with its sentence, and false for a name
// that is not one.
func VerdictOf(outcome string) (Verdict, bool) {
	for _, b := range businessEndings {
		if b.name == outcome {
			return Verdict{Error: b.name, Cause: b.cause}, true
		}
	}
	return Verdict{}, false
}

// Verdict is what a business ending reports: the output's top-level Error and Cause. The claim
// and capture states' Catch writes one at $.verdict (the caught error is the outcome), the
// compensation states build one there with their ResultSelector, and the reconcile step
// returns one with its settled outcomes ($.reconcile.verdict); the Succeed state's OutputPath
// selects it.
type Verdict struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// reconcileVerdicts maps the reconcile step's settled outcomes to the business ending each
// reaches through "What did reconciliation find?". OutcomePaid is "Confirmed", which carries
// no verdict; the other outcomes are not endings.
var reconcileVerdicts = map[string]string{
	OutcomeExpired:       EndHoldExpired,
	OutcomeFailed:        EndPaymentDeclined,
	OutcomeCanceled:      EndCustomerCanceled,
	OutcomeVoided:        EndVoidedAfterLatePayment,
	OutcomeCaptureFailed: EndCaptureFailed,
}

// reconcileVerdict is the verdict the reconcile step returns with outcome, or nil.
func reconcileVerdict(outcome string) *Verdict {
	name, ok := reconcileVerdicts[outcome]
	if !ok {
		return nil
	}
	v, _ := VerdictOf(name)
	return &v
}

// Execution statuses as the Step Functions API reports them.
const (
	statusRunning        = "RUNNING"
	statusPendingRedrive = "PENDING_REDRIVE"
	statusSucceeded      = "SUCCEEDED"
	statusFailed         = "FAILED"
	statusTimedOut       = "TIMED_OUT"
	statusAborted        = "ABORTED"
)

// Ending is how an execution ended, as EndingOf reads it.
type Ending struct {
	// Finished is false while the execution runs; nothing else is set then.
	Finished bool
	// Outcome names the ending: EndConfirmed, a business outcome (BusinessOutcomes), the error
	// of a failed execution (EndNeedsReconciliation, EndClaimFailed, States.TaskFailed, ...),
	// EndTimedOut or EndAborted.
	Outcome string
	// Cause is a business ending's sentence; empty for the others, whose cause the caller has
	// from DescribeExecution.
	Cause string
	// NeedsPerson: the execution failed, timed out or was stopped, or it succeeded with an
	// output that names no known ending (a definition and its readers out of step). The
	// sweeper keeps settling the reservation; a person should look at why the saga gave up.
	NeedsPerson bool
}

// EndingOf classifies an execution from its status, its output (the JSON DescribeExecution
// or the ExecutionSucceeded event reports) and its error (a failed execution's). A succeeded
// execution whose output has no top-level Error is Confirmed; one whose Error is a business
// outcome ended that way; any other succeeded output needs a person. Every execution that did
// not succeed needs a person, so for this state machine "failed executions" and "executions
// that need a person" are the same count.
func EndingOf(status, output, errorName string) Ending {
	switch status {
	case statusRunning, statusPendingRedrive:
		return Ending{}
	case statusSucceeded:
		return succeeded(output)
	case statusFailed:
		if errorName == "" {
			errorName = "(no error)"
		}
		return Ending{Finished: true, Outcome: errorName, NeedsPerson: true}
	case statusTimedOut:
		return Ending{Finished: true, Outcome: EndTimedOut, NeedsPerson: true}
	case statusAborted:
		return Ending{Finished: true, Outcome: EndAborted, NeedsPerson: true}
	}
	return Ending{Finished: true, Outcome: "(status " + status + ")", NeedsPerson: true}
}

// succeeded reads a succeeded execution's output.
func succeeded(output string) Ending {
	unreadable := Ending{Finished: true, Outcome: "(unreadable output)", NeedsPerson: true}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(output), &top); err != nil || top == nil {
		return unreadable
	}
	if _, ok := top["Error"]; !ok {
		// "Confirmed" outputs the execution's state: a sale shows in it, by the capture step's
		// result or reconciliation finding the payment captured. Any other output is not read
		// as a sale.
		if sold(top) {
			return Ending{Finished: true, Outcome: EndConfirmed}
		}
		return unreadable
	}
	var v Verdict
	if err := json.Unmarshal([]byte(output), &v); err != nil || v.Error == "" {
		return unreadable
	}
	_, known := VerdictOf(v.Error)
	return Ending{Finished: true, Outcome: v.Error, Cause: sentence(v.Cause), NeedsPerson: !known}
}

// sold reports whether a succeeded execution's state shows the sale: the capture step
// answered ($.capture), or reconciliation found the payment captured ($.reconcile.outcome paid).
func sold(state map[string]json.RawMessage) bool {
	var capture map[string]json.RawMessage
	if json.Unmarshal(state["capture"], &capture) == nil && len(capture) > 0 {
		return true
	}
	var rec struct {
		Outcome string `json:"outcome"`
	}
	return json.Unmarshal(state["reconcile"], &rec) == nil && rec.Outcome == OutcomePaid
}

// sentence returns the message of a Lambda error document ({"errorMessage": …, "errorType":
// …}), which is what Step Functions puts in the Cause a Catch records for a function's error,
// and any other cause as it is.
func sentence(cause string) string {
	if !strings.HasPrefix(strings.TrimSpace(cause), "{") {
		return cause
	}
	var doc struct {
		ErrorMessage *string `json:"errorMessage"`
	}
	if err := json.Unmarshal([]byte(cause), &doc); err != nil || doc.ErrorMessage == nil {
		return cause
	}
	return *doc.ErrorMessage
}
