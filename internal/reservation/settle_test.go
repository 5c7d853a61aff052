package reservation

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The settlement specification below is written from the business rules, not from settle.go:
// tables of rows tried in order, the first match answering. A nil set or an `either` flag
// matches anything. Recording resolves through wantPayment, the payment table as written out
// in transitions_test.go, and seat release through specSeatsMayGo, so that none of Decide's
// helpers takes part in computing the expected answer.

type flag int8

const (
	either flag = iota
	yes
	no
)

func (fl flag) admits(b bool) bool { return fl == either || (fl == yes) == b }

// when is the left side of a spec row.
type when struct {
	inv    []InventoryState
	pay    []PaymentState
	truth  []Truth
	policy []LateSuccessPolicy
	// live: HoldLive; canceled: CustomerCanceled; deadline: CaptureDeadlinePassed;
	// lost: SeatsLost; wasAuth: WasAuthorized; expired: HoldExpired;
	// exhausted: RefundAttempts >= MaxRefundAttempts.
	live, canceled, deadline, lost, wasAuth, expired, exhausted, unwinding flag
}

func (w when) matches(f Facts) bool {
	return member(w.inv, f.Inventory) && member(w.pay, f.Payment) && member(w.truth, f.Truth) &&
		member(w.policy, f.Policy) && w.live.admits(f.HoldLive) && w.canceled.admits(f.CustomerCanceled) &&
		w.deadline.admits(f.CaptureDeadlinePassed) && w.lost.admits(f.SeatsLost) &&
		w.wasAuth.admits(f.WasAuthorized) && w.expired.admits(f.HoldExpired) &&
		w.exhausted.admits(f.RefundAttempts >= MaxRefundAttempts) && w.unwinding.admits(f.Unwinding)
}

func member[T comparable](set []T, v T) bool { return set == nil || slices.Contains(set, v) }

// notPay is every payment state but drop.
func notPay(drop ...PaymentState) []PaymentState {
	var out []PaymentState
	for _, p := range PaymentStates() {
		if !slices.Contains(drop, p) {
			out = append(out, p)
		}
	}
	return out
}

// then is the right side of a spec row.
type then struct {
	act Action
	// record: with ActRecord, the event that brings the stored payment to the truth; resolved
	// through the table (directly, else through Unknown, else escalate).
	record PaymentEvent
	// release: with ActRecord, give the seats back in the same write where the rules allow.
	release bool
	// outcome: with ActDone; empty means named from the history (specOutcomes).
	outcome Settled
	waiting Waiting
	// next: this table does not answer; go on to the next one.
	next bool
}

type row struct {
	when when
	then then
}

var (
	inv       = func(s ...InventoryState) []InventoryState { return s }
	pay       = func(s ...PaymentState) []PaymentState { return s }
	truth     = func(s ...Truth) []Truth { return s }
	holds     = inv(Held, PaymentPending)
	moneyHeld = truth(TruthAuthorized, TruthCaptured)
	givenUp   = pay(Failed, Canceled, Refunded)
	// specSeatsMayGo: the payment states in which no money is or may be held (seatsMayGo).
	specSeatsMayGo = pay(NotStarted, Authorizing, Failed, Canceled, Refunded)
)

// specAtRest: what the stored states settle without the provider.
var specAtRest = []row{
	{when{inv: inv(Confirmed), pay: pay(Paid)}, then{act: ActDone, outcome: SettledSold}},
	// A truth already known to show money held, taken, pending or payable keeps released seats
	// unsettled, unless no payment was ever recorded.
	{when{inv: inv(Released), pay: givenUp, truth: truth(TruthAuthorized, TruthCaptured, TruthRefundPending,
		TruthRefundFailed, TruthProcessing, TruthAwaitingBuyer, TruthDeclined)}, then{next: true}},
	{when{inv: inv(Released), pay: append(pay(NotStarted), givenUp...)}, then{act: ActDone}},
	{when{}, then{next: true}},
}

// specOutcomes names a settled reservation from its history.
var specOutcomes = []struct {
	when when
	is   Settled
}{
	{when{canceled: yes}, SettledCanceled},
	{when{pay: pay(Refunded)}, SettledVoided},
	{when{pay: pay(Failed), wasAuth: yes}, SettledCaptureFailed},
	{when{pay: pay(Failed)}, SettledDeclined},
	{when{pay: pay(Canceled), wasAuth: yes}, SettledVoided},
	{when{pay: pay(Canceled), expired: yes}, SettledExpired},
	{when{pay: pay(Canceled)}, SettledDeclined},
	{when{}, SettledExpired},
}

// specTruthNeeded: not at rest, the provider's truth decides.
var specTruthNeeded = []row{
	{when{truth: truth(TruthNotAsked)}, then{act: ActAsk}},
	// Not from FAILED, which names the outcome: without the provider's answer nothing is
	// released anyway.
	{when{truth: truth(TruthUnavailable), pay: withEdge(OutcomeUnknown, UnknownNeedsReconciliation, Failed)},
		then{act: ActRecord, record: OutcomeUnknown}},
	{when{truth: truth(TruthUnavailable)}, then{act: ActWait, waiting: WaitProvider}},
	// A failed refund is counted before anything else.
	{when{truth: truth(TruthRefundFailed)}, then{act: ActRecord, record: RefundFailed}},
	{when{}, then{next: true}},
}

// withEdge lists the payment states from which wantPayment has ev, but those in skip.
func withEdge(ev PaymentEvent, skip ...PaymentState) []PaymentState {
	var out []PaymentState
	for _, p := range PaymentStates() {
		if _, ok := wantPayment[p][ev]; ok && !slices.Contains(skip, p) {
			out = append(out, p)
		}
	}
	return out
}

type specGoal string

const (
	toSell   specGoal = "sell"
	toUnwind specGoal = "unwind"
	toWait   specGoal = "wait"
)

var specGoals = []struct {
	when when
	goal specGoal
}{
	{when{canceled: yes}, toUnwind},
	{when{unwinding: yes}, toUnwind},
	{when{pay: pay(Failed, Canceled, Refunded, RefundPending)}, toUnwind},
	{when{truth: truth(TruthDeclined, TruthCanceled, TruthRefunded, TruthRefundPending)}, toUnwind},
	{when{inv: inv(Confirmed), truth: moneyHeld}, toSell},
	{when{inv: inv(Confirmed)}, toUnwind},
	{when{inv: holds, live: yes, truth: moneyHeld}, toSell},
	{when{inv: holds, live: yes}, toWait},
	// A lapsed hold or released seats: late success.
	// The capture deadline matters only for money still to capture.
	{when{truth: truth(TruthCaptured), policy: []LateSuccessPolicy{LateSuccessReacquire}, lost: no}, toSell},
	{when{truth: truth(TruthAuthorized), policy: []LateSuccessPolicy{LateSuccessReacquire}, lost: no, deadline: no}, toSell},
	{when{}, toUnwind},
}

var specSell = []row{
	{when{inv: inv(Confirmed), truth: truth(TruthCaptured)}, then{act: ActRecord, record: CaptureOK}},
	{when{inv: inv(Confirmed), pay: pay(Authorized)}, then{act: ActRecord, record: RequestCapture}},
	{when{inv: inv(Confirmed), pay: pay(CapturePending, UnknownNeedsReconciliation)}, then{act: ActCapture}},
	{when{inv: inv(Confirmed)}, then{act: ActRecord, record: AuthorizationOK}},
	{when{truth: truth(TruthCaptured), pay: notPay(Paid)}, then{act: ActRecord, record: CaptureOK}},
	{when{truth: truth(TruthAuthorized), pay: notPay(Authorized)}, then{act: ActRecord, record: AuthorizationOK}},
	{when{inv: holds, live: yes, pay: pay(Authorized)}, then{act: ActConfirm}},
	{when{}, then{act: ActReacquire}},
}

// specUnwind: money before seats.
var specUnwind = []row{
	// A decline is recorded before the void: FAILED is the durable "given up".
	{when{truth: truth(TruthDeclined), pay: pay(Authorizing)}, then{act: ActRecord, record: PaymentDeclined}},
	// So is an authorization: the record then names the outcome "voided".
	{when{truth: truth(TruthAuthorized), pay: pay(Authorizing)}, then{act: ActRecord, record: AuthorizationOK}},
	{when{truth: truth(TruthAuthorized, TruthAwaitingBuyer, TruthDeclined)}, then{act: ActVoid}},
	{when{truth: truth(TruthProcessing), inv: inv(Held, PaymentPending, Confirmed), pay: pay(Authorizing)},
		then{act: ActRelease}},
	{when{truth: truth(TruthProcessing)}, then{act: ActWait, waiting: WaitProvider}},
	{when{truth: truth(TruthCaptured), pay: pay(RefundPending)}, then{act: ActRecord, record: RefundFailed}},
	{when{truth: truth(TruthCaptured), pay: notPay(Paid)}, then{act: ActRecord, record: CaptureOK}},
	{when{truth: truth(TruthCaptured), exhausted: yes}, then{act: ActEscalate}},
	{when{truth: truth(TruthCaptured)}, then{act: ActRefund}},
	{when{truth: truth(TruthRefundPending), pay: notPay(RefundPending)}, then{act: ActRecord, record: RequestRefund}},
	{when{truth: truth(TruthRefundPending)}, then{act: ActWait, waiting: WaitProvider}},
	{when{truth: truth(TruthRefunded), pay: notPay(Refunded)}, then{act: ActRecord, record: RefundPayment, release: true}},
	// Confirmed seats whose authorization is gone: the capture failed.
	{when{truth: truth(TruthCanceled), inv: inv(Confirmed), pay: notPay(Canceled, Failed)},
		then{act: ActRecord, record: PaymentDeclined, release: true}},
	{when{truth: truth(TruthCanceled), pay: notPay(Canceled, Failed)}, then{act: ActRecord, record: VoidPayment, release: true}},
	{when{truth: truth(TruthNoPayment), pay: notPay(NotStarted, Failed, Canceled, Refunded)}, then{act: ActEscalate}},
	{when{inv: inv(Released)}, then{act: ActDone}},
	{when{pay: notPay(specSeatsMayGo...)}, then{act: ActEscalate}},
	{when{}, then{act: ActRelease}},
}

// specDecide is the expected answer for f, from the tables above.
func specDecide(f Facts) Decision {
	d, _ := specTrace(f)
	return d
}

// specTrace also names the rows that answered ("table/index").
func specTrace(f Facts) (Decision, []string) {
	var path []string
	for _, t := range []struct {
		name  string
		table []row
	}{{"atRest", specAtRest}, {"truth", specTruthNeeded}} {
		i, r := first(t.table, f)
		path = append(path, fmt.Sprintf("%s/%d", t.name, i))
		if !r.next {
			return specResolve(f, r), path
		}
	}
	g := toWait
	for i, r := range specGoals {
		if r.when.matches(f) {
			g = r.goal
			path = append(path, fmt.Sprintf("goal/%d", i))
			break
		}
	}
	switch g {
	case toSell:
		i, r := first(specSell, f)
		return specResolve(f, r), append(path, fmt.Sprintf("sell/%d", i))
	case toUnwind:
		i, r := first(specUnwind, f)
		return specResolve(f, r), append(path, fmt.Sprintf("unwind/%d", i))
	}
	return Decision{Action: ActWait, Waiting: WaitBuyer}, path
}

func first(table []row, f Facts) (int, then) {
	for i, r := range table {
		if r.when.matches(f) {
			return i, r.then
		}
	}
	panic("spec table without a catch-all row")
}

func specResolve(f Facts, th then) Decision {
	// Seats go back as an expiry whenever the hold lapsed, cancelled or not: others may have
	// claimed them since, which only an expiry leaves alone.
	lapsed := member(holds, f.Inventory) && !f.HoldLive
	switch th.act {
	case ActDone:
		if th.outcome != "" {
			return Decision{Action: ActDone, Outcome: th.outcome}
		}
		for _, o := range specOutcomes {
			if o.when.matches(f) {
				return Decision{Action: ActDone, Outcome: o.is}
			}
		}
	case ActRelease:
		return Decision{Action: ActRelease, Expired: lapsed}
	case ActRecord:
		if to, ok := wantPayment[f.Payment][th.record]; ok {
			d := Decision{Action: ActRecord, Event: th.record}
			if th.release && f.Inventory != Released && member(specSeatsMayGo, to) {
				d.ReleaseSeats, d.Expired = true, lapsed
			}
			return d
		}
		if _, ok := wantPayment[f.Payment][OutcomeUnknown]; ok {
			if _, ok := wantPayment[UnknownNeedsReconciliation][th.record]; ok {
				return Decision{Action: ActRecord, Event: OutcomeUnknown}
			}
		}
		return Decision{Action: ActEscalate}
	}
	return Decision{Action: th.act, Waiting: th.waiting}
}

// everyFacts calls visit with every combination of the facts the decision reads, with
// RefundAttempts 0 or exhausted.
func everyFacts(visit func(Facts)) {
	bools := []bool{false, true}
	for _, i := range inv(Held, PaymentPending, Confirmed, Released) {
		for _, p := range PaymentStates() {
			for _, tr := range Truths() {
				for _, live := range bools {
					for _, canceled := range bools {
						for _, deadline := range bools {
							for _, lost := range bools {
								for _, wasAuth := range bools {
									for _, expired := range bools {
										for _, pol := range []LateSuccessPolicy{LateSuccessReacquire, LateSuccessVoid} {
											for _, attempts := range []int{0, MaxRefundAttempts - 1, MaxRefundAttempts, MaxRefundAttempts + 1} {
												for _, unwinding := range bools {
													visit(Facts{Inventory: i, Payment: p, Truth: tr, HoldLive: live,
														CustomerCanceled: canceled, Policy: pol, CaptureDeadlinePassed: deadline,
														SeatsLost: lost, RefundAttempts: attempts, WasAuthorized: wasAuth,
														HoldExpired: expired, Unwinding: unwinding})
												}
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

func describe(f Facts) string {
	return fmt.Sprintf("%s/%s truth=%s live=%v canceled=%v unwinding=%v deadline=%v lost=%v wasAuth=%v expired=%v policy=%s attempts=%d",
		f.Inventory, f.Payment, f.Truth, f.HoldLive, f.CustomerCanceled, f.Unwinding, f.CaptureDeadlinePassed, f.SeatsLost,
		f.WasAuthorized, f.HoldExpired, f.Policy, f.RefundAttempts)
}

func TestDecideMatchesTheSpecificationForEveryCombination(t *testing.T) {
	n, bad := 0, 0
	everyFacts(func(f Facts) {
		n++
		got, want := Decide(f), specDecide(f)
		// Reasons are for people; an escalation or a wait must still give one.
		if (got.Action == ActEscalate || got.Action == ActWait) && got.Reason == "" {
			t.Errorf("%s: %s without a reason", describe(f), got.Action)
		}
		got.Reason = ""
		if got != want {
			bad++
			if bad <= 30 {
				t.Errorf("%s:\n got  %+v\n want %+v", describe(f), got, want)
			}
		}
	})
	if bad > 30 {
		t.Errorf("... %d disagreements in all", bad)
	}
	if want := 4 * len(PaymentStates()) * len(Truths()) * 128 * 2 * 4; n != want {
		t.Fatalf("covered %d combinations, want %d", n, want)
	}
	t.Logf("Decide agrees with the specification on %d of %d combinations", n-bad, n)
}

// TestEverySpecificationRowIsReachedButTheSafetyNets guards the spec itself: a row that no
// combination reaches is a rule written in the wrong order, except the two fall-backs the
// rules keep for safety. Unwind's "released seats: done" is never reached because released
// seats whose payment lets them go are already at rest; its "payment does not let seats go:
// escalate" is never reached because the only truths that get that far (no payment,
// canceled, refunded) leave just payment states that let the seats go.
func TestEverySpecificationRowIsReachedButTheSafetyNets(t *testing.T) {
	hits := map[string]int{}
	everyFacts(func(f Facts) {
		_, path := specTrace(f)
		for _, p := range path {
			hits[p]++
		}
	})
	safetyNets := map[string]bool{
		fmt.Sprintf("unwind/%d", len(specUnwind)-3): true,
		fmt.Sprintf("unwind/%d", len(specUnwind)-2): true,
	}
	for _, tab := range []struct {
		name string
		n    int
	}{{"atRest", len(specAtRest)}, {"truth", len(specTruthNeeded)}, {"goal", len(specGoals)},
		{"sell", len(specSell)}, {"unwind", len(specUnwind)}} {
		for i := range tab.n {
			name := fmt.Sprintf("%s/%d", tab.name, i)
			if reached := hits[name] > 0; reached == safetyNets[name] {
				t.Errorf("spec row %s reached by %d combinations", name, hits[name])
			}
		}
	}
}

// TestDecideExamples pins a few answers in words, for the reader.
func TestDecideExamples(t *testing.T) {
	cases := []struct {
		name string
		f    Facts
		want Decision
	}{
		{"late authorization after the customer cancelled is recorded first",
			Facts{Inventory: Released, Payment: Authorizing, Truth: TruthAuthorized, CustomerCanceled: true, Policy: LateSuccessReacquire},
			Decision{Action: ActRecord, Event: AuthorizationOK}},
		{"a recorded late authorization after the customer cancelled is voided, never reacquired",
			Facts{Inventory: Released, Payment: Authorized, Truth: TruthAuthorized, CustomerCanceled: true, Policy: LateSuccessReacquire},
			Decision{Action: ActVoid}},
		{"late authorization of a lapsed hold is recorded before reacquiring",
			Facts{Inventory: Held, Payment: Authorizing, Truth: TruthAuthorized, Policy: LateSuccessReacquire},
			Decision{Action: ActRecord, Event: AuthorizationOK}},
		{"a refund the provider settled releases the seats in the same write",
			Facts{Inventory: PaymentPending, Payment: Paid, Truth: TruthRefunded, Policy: LateSuccessVoid},
			Decision{Action: ActRecord, Event: RefundPayment, ReleaseSeats: true, Expired: true}},
		{"capture after confirm goes through RequestCapture",
			Facts{Inventory: Confirmed, Payment: Authorized, Truth: TruthAuthorized},
			Decision{Action: ActRecord, Event: RequestCapture}},
		{"a processing payment of a lapsed hold lets the seats expire",
			Facts{Inventory: PaymentPending, Payment: Authorizing, Truth: TruthProcessing},
			Decision{Action: ActRelease, Expired: true}},
		{"refunds that keep failing go to a person",
			Facts{Inventory: Released, Payment: Paid, Truth: TruthCaptured, CustomerCanceled: true, RefundAttempts: MaxRefundAttempts},
			Decision{Action: ActEscalate}},
		{"a truth left unset goes to a person rather than releasing the lapsed hold",
			Facts{Inventory: Held, Payment: Authorizing},
			Decision{Action: ActEscalate}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(c.f)
			got.Reason = ""
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestSettlementAlwaysComesToRest carries out decisions on a small model of the store and the
// provider, from every starting combination and every fixed provider truth, and requires
// every run to end in done, wait or escalate within a few steps: no decision undoes another.
func TestSettlementAlwaysComesToRest(t *testing.T) {
	const maxSteps = 12
	runs, longest, loops := 0, 0, 0
	everyFacts(func(start Facts) {
		for _, given := range Truths() {
			if given == TruthNotAsked || (start.Truth != TruthNotAsked && start.Truth != given) {
				continue
			}
			runs++
			f := start
			var trace []string
			for step := 0; ; step++ {
				d := Decide(f)
				trace = append(trace, fmt.Sprintf("%s/%s/%s→%s%s", f.Inventory, f.Payment, f.Truth, d.Action, d.Event))
				if d.Action == ActDone || d.Action == ActWait || d.Action == ActEscalate {
					longest = max(longest, step)
					break
				}
				if step == maxSteps {
					loops++
					if loops <= 10 {
						t.Errorf("no rest from %s (provider %s): %s", describe(start), given, strings.Join(trace, " "))
					}
					break
				}
				switch d.Action {
				case ActAsk:
					f.Truth = given
				case ActRecord:
					to, ok := NextPayment(f.Payment, d.Event)
					if !ok {
						t.Fatalf("from %s: illegal record %s from %s", describe(start), d.Event, f.Payment)
					}
					f.Payment = to
					switch to {
					case Failed, Canceled, RefundPending, Refunded:
						f.Unwinding = true
					}
					if d.Event == RefundFailed {
						// Counted and forgotten: the money is captured, the next refund is new.
						f.RefundAttempts++
						f.Truth = TruthCaptured
					}
					if d.ReleaseSeats {
						f.Inventory = Released
					}
				case ActConfirm, ActReacquire:
					f.Inventory = Confirmed
				case ActRelease:
					f.Inventory = Released
				case ActVoid:
					switch f.Truth {
					case TruthAuthorized, TruthAwaitingBuyer, TruthDeclined:
						f.Truth = TruthCanceled
					}
				case ActRefund:
					f.Truth = TruthRefunded
				case ActCapture:
					f.Truth = TruthCaptured
				default:
					t.Fatalf("from %s: unknown action %q", describe(start), d.Action)
				}
			}
		}
	})
	if loops > 0 {
		t.Errorf("%d of %d runs found no rest", loops, runs)
	}
	t.Logf("%d runs, each at rest within %d actions", runs, longest)
}
