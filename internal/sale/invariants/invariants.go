// Package invariants checks, after a sale has settled, the promises seatsaga makes: no seat is
// sold twice, nobody is charged for a seat they did not get, and no money or hold is forgotten.
//
// The checker works on a Snapshot, a plain-data picture of DynamoDB (seats, reservations,
// outbox), the payment provider's ledger, the workflow engine's executions and the events the
// relay published. Collect builds a Snapshot through narrow reader interfaces, so the rules
// themselves are pure functions that tests feed with hand-built fixtures.
package invariants

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Inventory states of seats and reservations (internal/reservation/states.go).
const (
	Available      = "AVAILABLE"
	Held           = "HELD"
	PaymentPending = "PAYMENT_PENDING"
	Confirmed      = "CONFIRMED"
	Released       = "RELEASED"
)

// NeedsReconciliation is the payment state of a reservation whose payment outcome is unknown.
const NeedsReconciliation = "UNKNOWN_NEEDS_RECONCILIATION"

// Paid is the payment state of a reservation whose capture the saga recorded.
const Paid = "PAID"

// Provider PaymentIntent statuses the rules look at.
const (
	// PIRequiresCapture is an open authorization: money held on the card, neither captured nor
	// voided.
	PIRequiresCapture = "requires_capture"
)

// Execution statuses as Step Functions reports them.
const (
	ExecRunning = "RUNNING"
)

// Rule names one invariant.
type Rule string

// The invariants.
const (
	// RuleSeatSingleOwner: no seat is owned by two reservations.
	RuleSeatSingleOwner Rule = "seat-single-owner"
	// RuleConfirmedOwnsSeats: every CONFIRMED reservation owns all its seats and each of them is
	// CONFIRMED.
	RuleConfirmedOwnsSeats Rule = "confirmed-owns-seats"
	// RuleCaptureBelongsToConfirmed: every capture belongs to a CONFIRMED reservation or is
	// refunded.
	RuleCaptureBelongsToConfirmed Rule = "capture-belongs-to-confirmed"
	// RuleNoOpenAuthorization: no authorization is left open on a released (or missing)
	// reservation.
	RuleNoOpenAuthorization Rule = "no-open-authorization-on-released"
	// RuleNoStaleHold: no seat is HELD or PAYMENT_PENDING past its deadline plus grace unless its
	// reservation is in the reconciliation backlog.
	RuleNoStaleHold Rule = "no-stale-hold"
	// RuleExecutionSettled: every execution finished, or its reservation is in the
	// reconciliation backlog.
	RuleExecutionSettled Rule = "execution-finished-or-backlogged"
	// RuleOutboxPayloadStable: no outbox event is published twice with different payloads.
	RuleOutboxPayloadStable Rule = "outbox-published-once-per-payload"
	// RuleSoldEqualsCaptured: the number of sold seats equals the seats covered by captured
	// payments net of refunds, and each confirmed reservation's net capture equals its amount.
	RuleSoldEqualsCaptured Rule = "sold-equals-net-captured"
	// RuleCaptureMatchesSeatPrices: every capture took exactly the sum of its reservation's seat
	// prices, in the seats' currency; the server prices a reservation, never the client.
	RuleCaptureMatchesSeatPrices Rule = "capture-equals-seat-prices"
	// RuleNoChargeForAcknowledgedCancel: every reservation whose customer cancel was recorded
	// keeps no money net of refunds, whatever its seats' state.
	RuleNoChargeForAcknowledgedCancel Rule = "no-charge-for-acknowledged-cancel"
	// RuleConfirmedExactlyWhenCaptured: per reservation, the seats are CONFIRMED if and only if
	// the money is captured. CONFIRMED implies payment state PAID and a net capture equal to the
	// amount; a net capture above 0 implies CONFIRMED.
	RuleConfirmedExactlyWhenCaptured Rule = "confirmed-exactly-when-captured"

	// RuleCustomerWithinHoldCap: no customer has more active holds (HELD before its deadline,
	// or PAYMENT_PENDING whatever its deadline, since a pending payment keeps its place until
	// the saga or the sweeper ends it) than the cap on reservations in progress allows
	// (Snapshot.MaxActive).
	RuleCustomerWithinHoldCap Rule = "customer-within-hold-cap"
	// RuleRefundSettled: every refund the provider holds succeeded, or its reservation is in
	// the reconciliation backlog, whose alarm tells a person. A refund still pending or failed
	// outside the backlog is money owed to a customer that nothing is watching.
	RuleRefundSettled Rule = "refund-settled"
	// RuleNeedsPersonBacklogged: every execution that ended needing a person (failed, timed
	// out, aborted, or an output naming no known ending) left its reservation in the
	// reconciliation backlog, or settled: confirmed and paid, or released with nothing held,
	// captured or refunding.
	RuleNeedsPersonBacklogged Rule = "needs-person-in-backlog"
	// RuleConsumerAppliedOnce: the consumer applied every published event it handles exactly
	// once: its record is SENT with the notification sent (under the event's id, the
	// idempotency key a real channel dedupes by), or STALE with nothing sent; nothing is sent
	// or recorded for an event that was never published.
	RuleConsumerAppliedOnce Rule = "consumer-applied-every-event-once"
)

// Rules lists every invariant in the order the checker reports them.
var Rules = []Rule{
	RuleSeatSingleOwner, RuleConfirmedOwnsSeats, RuleCaptureBelongsToConfirmed,
	RuleNoOpenAuthorization, RuleNoStaleHold, RuleExecutionSettled, RuleOutboxPayloadStable,
	RuleSoldEqualsCaptured, RuleCaptureMatchesSeatPrices, RuleNoChargeForAcknowledgedCancel,
	RuleConfirmedExactlyWhenCaptured, RuleCustomerWithinHoldCap, RuleRefundSettled,
	RuleNeedsPersonBacklogged, RuleConsumerAppliedOnce,
}

// Seat is one seat item.
type Seat struct {
	EventID       string
	SeatID        string
	State         string
	ReservationID string
	HoldExpiresAt time.Time
	Version       int64
	// PriceMinor and Currency are the seat's price (0 and "" when it has none).
	PriceMinor int64
	Currency   string
}

// Key is the seat's table key, {eventId}#{seatId}.
func (s Seat) Key() string { return s.EventID + "#" + s.SeatID }

// Reservation is one reservation item, reduced to what the rules need.
type Reservation struct {
	ID              string
	EventID         string
	SeatIDs         []string
	State           string // inventory state
	PaymentState    string
	HoldExpiresAt   time.Time
	Version         int64
	Amount          int64
	Currency        string
	PaymentIntentID string
	// InReconciliation is true when the reservation is in the reconciliation backlog: its
	// payment state is UNKNOWN_NEEDS_RECONCILIATION or it carries a reconciliation record.
	InReconciliation bool
	// CustomerCanceled is true when the customer's cancel was recorded on the reservation
	// (its customerCanceled attribute); from then on it may keep no money.
	CustomerCanceled bool
	CustomerID       string
}

// SeatKeys returns the table keys of the reservation's seats.
func (r Reservation) SeatKeys() []string {
	keys := make([]string, len(r.SeatIDs))
	for i, s := range r.SeatIDs {
		keys[i] = r.EventID + "#" + s
	}
	return keys
}

// Payment is the provider's ledger for one PaymentIntent.
type Payment struct {
	ReservationID   string
	PaymentIntentID string
	Status          string // provider status, e.g. requires_capture, succeeded, canceled
	Amount          int64
	Currency        string
	Captured        int64
	Refunded        int64
	// RefundsPending and RefundsFailed count the refunds the provider has not settled and
	// those it refused (Refunded counts only what succeeded).
	RefundsPending int
	RefundsFailed  int
}

// Net is what the provider kept: captured minus refunded.
func (p Payment) Net() int64 { return p.Captured - p.Refunded }

// Execution is one workflow execution; Name is the reservation id.
type Execution struct {
	Name   string
	ARN    string
	Status string
	// NeedsPerson is saga.Ending's: the execution finished in a way a person must look at.
	NeedsPerson bool
	// Outcome names the ending (saga.Ending.Outcome), for the violation's description.
	Outcome string
}

// Publication is one event the relay put on the bus.
type Publication struct {
	EventID string
	Payload []byte
}

// Snapshot is everything the rules read.
type Snapshot struct {
	// Now is the stack's clock at collection time; Grace is the sweeper's grace after a hold's
	// deadline.
	Now   time.Time
	Grace time.Duration
	// MaxActive is the cap on one customer's reservations in progress (0: no cap).
	MaxActive    int
	Seats        []Seat
	Reservations []Reservation
	Payments     []Payment
	Executions   []Execution
	Published    []Publication
	// Consumer is what the example consumer did with the published events; nil when no
	// consumer ran (its rule then judges nothing).
	Consumer *ConsumerView
}

// ConsumerRecord is the consumer's ProcessedEvents record of one event.
type ConsumerRecord struct {
	EventID string
	// State is SENDING, SENT or STALE (internal/consumer).
	State string
}

// Consumer record states (internal/consumer).
const (
	ConsumerSending = "SENDING"
	ConsumerSent    = "SENT"
	ConsumerStale   = "STALE"
)

// ConsumerView is the consumer's side of the published events.
type ConsumerView struct {
	Records []ConsumerRecord
	// Sent lists the event id of every notification sent, once per send.
	Sent []string
	// Handled names the published event types the consumer acts on; the others it ignores
	// and records nothing for.
	Handled map[string]bool
}

// Violation is one broken promise, described so that an operator can look it up.
type Violation struct {
	Rule          Rule
	ReservationID string
	Seat          string
	Detail        string
}

func (v Violation) String() string {
	var b strings.Builder
	b.WriteString(string(v.Rule))
	if v.ReservationID != "" {
		b.WriteString(" reservation=" + v.ReservationID)
	}
	if v.Seat != "" {
		b.WriteString(" seat=" + v.Seat)
	}
	b.WriteString(": " + v.Detail)
	return b.String()
}

// Verdict is the checker's answer.
type Verdict struct {
	Violations []Violation
	// Counted is what the rules looked at, for the summary line.
	Seats, Reservations, Payments, Executions, Published int
	// SoldSeats is the number of CONFIRMED seat items; PaidSeats the seats covered by captured
	// payments net of refunds (both outside the reconciliation backlog).
	SoldSeats, PaidSeats int
	// Backlog is how many reservations sit in the reconciliation backlog.
	Backlog int
}

// OK reports whether every invariant holds.
func (v Verdict) OK() bool { return len(v.Violations) == 0 }

// ByRule counts violations per rule; every rule is present.
func (v Verdict) ByRule() map[Rule]int {
	out := make(map[Rule]int, len(Rules))
	for _, r := range Rules {
		out[r] = 0
	}
	for _, x := range v.Violations {
		out[x.Rule]++
	}
	return out
}

// Broken reports whether rule has at least one violation.
func (v Verdict) Broken(rule Rule) bool { return v.ByRule()[rule] > 0 }

// String renders the verdict: one line when it passes, one line per violation otherwise.
func (v Verdict) String() string {
	var b strings.Builder
	if v.OK() {
		fmt.Fprintf(&b, "invariants: PASS (%d rules; %d seats, %d reservations, %d payments, %d executions, %d published events; sold %d = paid %d; backlog %d)",
			len(Rules), v.Seats, v.Reservations, v.Payments, v.Executions, v.Published, v.SoldSeats, v.PaidSeats, v.Backlog)
		return b.String()
	}
	fmt.Fprintf(&b, "invariants: FAIL (%d violations)\n", len(v.Violations))
	for _, x := range v.Violations {
		b.WriteString("  " + x.String() + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// Check evaluates every rule against s.
func Check(s Snapshot) Verdict {
	v := Verdict{
		Seats: len(s.Seats), Reservations: len(s.Reservations), Payments: len(s.Payments),
		Executions: len(s.Executions), Published: len(s.Published),
	}
	resByID := make(map[string]Reservation, len(s.Reservations))
	for _, r := range s.Reservations {
		resByID[r.ID] = r
		if r.InReconciliation {
			v.Backlog++
		}
	}
	seatByKey := make(map[string]Seat, len(s.Seats))
	for _, st := range s.Seats {
		seatByKey[st.Key()] = st
	}
	add := func(rule Rule, res, seat, format string, args ...any) {
		v.Violations = append(v.Violations, Violation{Rule: rule, ReservationID: res, Seat: seat, Detail: fmt.Sprintf(format, args...)})
	}

	checkSingleOwner(s, seatByKey, add)
	checkConfirmedOwnsSeats(s, seatByKey, add)
	checkPayments(s, resByID, add)
	checkStaleHolds(s, resByID, add)
	checkExecutions(s, resByID, add)
	checkPublications(s, add)
	ledger := ledgerByReservation(s.Payments)
	v.SoldSeats, v.PaidSeats = checkSoldEqualsCaptured(s, resByID, ledger, add)
	checkCapturesMatchSeatPrices(s, resByID, seatByKey, add)
	checkAcknowledgedCancels(s, ledger, add)
	checkConfirmedExactlyWhenCaptured(s, ledger, add)
	checkHoldCap(s, add)
	checkRefundsSettled(s, resByID, add)
	checkNeedsPersonBacklogged(s, resByID, add)
	checkConsumerAppliedOnce(s, add)

	sort.SliceStable(v.Violations, func(i, j int) bool {
		a, b := v.Violations[i], v.Violations[j]
		if a.Rule != b.Rule {
			return ruleIndex(a.Rule) < ruleIndex(b.Rule)
		}
		if a.ReservationID != b.ReservationID {
			// Violations about one reservation first, sale-wide totals last.
			if a.ReservationID == "" || b.ReservationID == "" {
				return b.ReservationID == ""
			}
			return a.ReservationID < b.ReservationID
		}
		return a.Seat < b.Seat
	})
	return v
}

type addFunc func(rule Rule, res, seat, format string, args ...any)

// checkHoldCap counts each customer's active holds against the cap: a HELD hold until its
// deadline, after which its seats may be reclaimed, and a pending payment until it ends,
// whatever its deadline, since it keeps its seats and its place until then.
func checkHoldCap(s Snapshot, add addFunc) {
	if s.MaxActive <= 0 {
		return
	}
	holds := map[string][]string{}
	for _, r := range s.Reservations {
		if r.State == PaymentPending || r.State == Held && r.HoldExpiresAt.After(s.Now) {
			holds[r.CustomerID] = append(holds[r.CustomerID], r.ID)
		}
	}
	for customer, ids := range holds {
		if len(ids) > s.MaxActive {
			sort.Strings(ids)
			add(RuleCustomerWithinHoldCap, "", "", "customer %s holds %d reservations at once (%s), the cap is %d",
				customer, len(ids), strings.Join(ids, ", "), s.MaxActive)
		}
	}
}

func ruleIndex(r Rule) int {
	for i, x := range Rules {
		if x == r {
			return i
		}
	}
	return len(Rules)
}

// live reports whether a reservation still lays claim to its seats at now: confirmed, or holding
// with a deadline that has not passed. An expired hold may legitimately have been reclaimed.
func live(r Reservation, now time.Time) bool {
	switch r.State {
	case Confirmed:
		return true
	case Held, PaymentPending:
		return r.HoldExpiresAt.IsZero() || now.Before(r.HoldExpiresAt) || r.InReconciliation
	}
	return false
}

func checkSingleOwner(s Snapshot, seats map[string]Seat, add addFunc) {
	claims := map[string][]string{}
	for _, r := range s.Reservations {
		if !live(r, s.Now) {
			continue
		}
		for _, k := range r.SeatKeys() {
			claims[k] = append(claims[k], r.ID)
		}
	}
	keys := make([]string, 0, len(claims))
	for k := range claims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		owners := claims[k]
		if len(owners) > 1 {
			sort.Strings(owners)
			add(RuleSeatSingleOwner, owners[0], k, "%d reservations claim the seat at once: %s (seat item says %s, owner %q)",
				len(owners), strings.Join(owners, ", "), seats[k].State, seats[k].ReservationID)
		}
	}
	// A seat item that names an owner who does not know about it is a second, hidden owner.
	resSeats := map[string]map[string]bool{}
	for _, r := range s.Reservations {
		m := map[string]bool{}
		for _, k := range r.SeatKeys() {
			m[k] = true
		}
		resSeats[r.ID] = m
	}
	for _, st := range s.Seats {
		if st.State == Available || st.State == "" || st.ReservationID == "" {
			continue
		}
		m, ok := resSeats[st.ReservationID]
		if !ok {
			add(RuleSeatSingleOwner, st.ReservationID, st.Key(), "seat is %s for a reservation that does not exist", st.State)
			continue
		}
		if !m[st.Key()] {
			add(RuleSeatSingleOwner, st.ReservationID, st.Key(), "seat is %s for a reservation that does not list it", st.State)
		}
	}
}

func checkConfirmedOwnsSeats(s Snapshot, seats map[string]Seat, add addFunc) {
	for _, r := range s.Reservations {
		if r.State != Confirmed {
			continue
		}
		if len(r.SeatIDs) == 0 {
			add(RuleConfirmedOwnsSeats, r.ID, "", "confirmed reservation lists no seats")
		}
		for _, k := range r.SeatKeys() {
			st, ok := seats[k]
			switch {
			case !ok:
				add(RuleConfirmedOwnsSeats, r.ID, k, "seat item does not exist")
			case st.ReservationID != r.ID:
				add(RuleConfirmedOwnsSeats, r.ID, k, "seat is owned by %q (%s), not by the confirmed reservation", st.ReservationID, st.State)
			case st.State != Confirmed:
				add(RuleConfirmedOwnsSeats, r.ID, k, "seat is %s, want CONFIRMED", st.State)
			}
		}
	}
}

func checkPayments(s Snapshot, res map[string]Reservation, add addFunc) {
	for _, p := range s.Payments {
		r, known := res[p.ReservationID]
		if p.Net() > 0 && (!known || r.State != Confirmed) && !(known && r.InReconciliation) {
			state := "missing"
			if known {
				state = r.State
			}
			add(RuleCaptureBelongsToConfirmed, p.ReservationID, "", "PaymentIntent %s captured %d (net %d %s) but the reservation is %s",
				p.PaymentIntentID, p.Captured, p.Net(), p.Currency, state)
		}
		if p.Status == PIRequiresCapture && (!known || r.State == Released || r.State == Available) && !(known && r.InReconciliation) {
			state := "missing"
			if known {
				state = r.State
			}
			add(RuleNoOpenAuthorization, p.ReservationID, "", "PaymentIntent %s still holds %d %s (requires_capture) on a reservation that is %s",
				p.PaymentIntentID, p.Amount, p.Currency, state)
		}
	}
}

func checkStaleHolds(s Snapshot, res map[string]Reservation, add addFunc) {
	for _, st := range s.Seats {
		if st.State != Held && st.State != PaymentPending {
			continue
		}
		if st.HoldExpiresAt.IsZero() {
			add(RuleNoStaleHold, st.ReservationID, st.Key(), "seat is %s with no deadline", st.State)
			continue
		}
		limit := st.HoldExpiresAt.Add(s.Grace)
		if !s.Now.After(limit) {
			continue
		}
		if r, ok := res[st.ReservationID]; ok && r.InReconciliation {
			continue
		}
		add(RuleNoStaleHold, st.ReservationID, st.Key(), "seat is %s %s past its deadline %s (grace %s) and its reservation is not in the reconciliation backlog",
			st.State, s.Now.Sub(st.HoldExpiresAt).Round(time.Millisecond), st.HoldExpiresAt.UTC().Format(time.RFC3339Nano), s.Grace)
	}
}

func checkExecutions(s Snapshot, res map[string]Reservation, add addFunc) {
	for _, e := range s.Executions {
		if e.Status != ExecRunning {
			continue
		}
		if r, ok := res[e.Name]; ok && r.InReconciliation {
			continue
		}
		add(RuleExecutionSettled, e.Name, "", "execution %s is still RUNNING and its reservation is not in the reconciliation backlog", e.ARN)
	}
}

func checkPublications(s Snapshot, add addFunc) {
	first := map[string][]byte{}
	reported := map[string]bool{}
	for _, p := range s.Published {
		prev, seen := first[p.EventID]
		if !seen {
			first[p.EventID] = p.Payload
			continue
		}
		if !samePayload(prev, p.Payload) && !reported[p.EventID] {
			reported[p.EventID] = true
			add(RuleOutboxPayloadStable, "", "", "event %s was published with two different payloads: %s vs %s",
				p.EventID, clip(prev), clip(p.Payload))
		}
	}
}

// atRest reports whether r must have settled, as the other rules judge it: it is outside the
// reconciliation backlog, where the provider's outcome is unknown and the reconciler settles it,
// and it is not a live hold (see live), whose buyer may still be paying. A running execution
// outside the backlog gets no exemption, because execution-finished-or-backlogged reports it.
func atRest(r Reservation, now time.Time) bool {
	return !r.InReconciliation && (r.State == Confirmed || !live(r, now))
}

// money is what the provider's ledger holds for one reservation, summed over its
// PaymentIntents.
type money struct{ captured, refunded int64 }

func (m money) net() int64 { return m.captured - m.refunded }

func ledgerByReservation(ps []Payment) map[string]money {
	out := map[string]money{}
	for _, p := range ps {
		m := out[p.ReservationID]
		m.captured += p.Captured
		m.refunded += p.Refunded
		out[p.ReservationID] = m
	}
	return out
}

func checkSoldEqualsCaptured(s Snapshot, res map[string]Reservation, ledger map[string]money, add addFunc) (sold, paid int) {
	for _, st := range s.Seats {
		if st.State != Confirmed {
			continue
		}
		if r, ok := res[st.ReservationID]; ok && r.InReconciliation {
			continue
		}
		sold++
	}
	net := make(map[string]int64, len(ledger))
	for id, m := range ledger {
		net[id] = m.net()
	}
	ids := make([]string, 0, len(net))
	for id := range net {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r, ok := res[id]
		if ok && r.InReconciliation {
			continue
		}
		if net[id] <= 0 {
			continue
		}
		if !ok {
			paid++ // one seat at least was paid for; the capture rule names the reservation
			continue
		}
		paid += len(r.SeatIDs)
		if r.State == Confirmed && r.Amount > 0 && net[id] != r.Amount {
			add(RuleSoldEqualsCaptured, id, "", "confirmed reservation's amount is %d %s but the provider kept %d", r.Amount, r.Currency, net[id])
		}
	}
	for _, r := range s.Reservations {
		if r.State == Confirmed && !r.InReconciliation && net[r.ID] <= 0 {
			add(RuleSoldEqualsCaptured, r.ID, "", "confirmed reservation has no captured payment (net %d)", net[r.ID])
		}
	}
	if sold != paid {
		add(RuleSoldEqualsCaptured, "", "", "%d seats are CONFIRMED but captured payments net of refunds cover %d", sold, paid)
	}
	return sold, paid
}

// checkCapturesMatchSeatPrices compares every capture with the price of its reservation's seats:
// the amount captured (before refunds) must be their sum, and the currency theirs. A capture for
// an unknown reservation is left to the capture rule, which names it.
func checkCapturesMatchSeatPrices(s Snapshot, res map[string]Reservation, seats map[string]Seat, add addFunc) {
	for _, p := range s.Payments {
		if p.Captured <= 0 {
			continue
		}
		r, ok := res[p.ReservationID]
		if !ok {
			continue
		}
		var (
			price      int64
			currencies = map[string]bool{}
			problems   []string
		)
		for _, k := range r.SeatKeys() {
			st, ok := seats[k]
			switch {
			case !ok:
				problems = append(problems, k+" does not exist")
			case st.PriceMinor <= 0 || st.Currency == "":
				problems = append(problems, k+" has no price")
			default:
				price += st.PriceMinor
				currencies[strings.ToUpper(st.Currency)] = true
			}
		}
		if len(r.SeatIDs) == 0 {
			problems = append(problems, "the reservation lists no seats")
		}
		if len(problems) > 0 {
			add(RuleCaptureMatchesSeatPrices, r.ID, "", "PaymentIntent %s captured %d %s but the seats cannot be priced: %s",
				p.PaymentIntentID, p.Captured, p.Currency, strings.Join(problems, "; "))
			continue
		}
		if len(currencies) != 1 || !currencies[strings.ToUpper(p.Currency)] || p.Captured != price {
			cur := make([]string, 0, len(currencies))
			for c := range currencies {
				cur = append(cur, c)
			}
			sort.Strings(cur)
			add(RuleCaptureMatchesSeatPrices, r.ID, "", "PaymentIntent %s captured %d %s but the reservation's seats cost %d %s",
				p.PaymentIntentID, p.Captured, p.Currency, price, strings.Join(cur, "/"))
		}
	}
}

// checkAcknowledgedCancels holds every recorded customer cancel to a net capture of 0. Without it
// a cancel that was confirmed and charged anyway would satisfy every other rule.
func checkAcknowledgedCancels(s Snapshot, ledger map[string]money, add addFunc) {
	for _, r := range s.Reservations {
		if !r.CustomerCanceled || !atRest(r, s.Now) {
			continue
		}
		if m := ledger[r.ID]; m.net() != 0 {
			add(RuleNoChargeForAcknowledgedCancel, r.ID, "", "the customer's cancel was recorded but the provider kept %d %s (captured %d, refunded %d); the reservation is %s, payment %s",
				m.net(), r.Currency, m.captured, m.refunded, r.State, r.PaymentState)
		}
	}
}

// checkConfirmedExactlyWhenCaptured states, per reservation, that CONFIRMED seats and captured
// money go together. It overlaps capture-belongs-to-confirmed and the per-reservation checks of
// sold-equals-net-captured on purpose, so that the equivalence reads as one rule; it adds the
// payment state, which neither of them reads. The sale-wide count, captures without a
// reservation and seat prices stay with those rules.
func checkConfirmedExactlyWhenCaptured(s Snapshot, ledger map[string]money, add addFunc) {
	for _, r := range s.Reservations {
		if !atRest(r, s.Now) {
			continue
		}
		net := ledger[r.ID].net()
		switch {
		case r.State == Confirmed && (net <= 0 || net != r.Amount || r.PaymentState != Paid):
			add(RuleConfirmedExactlyWhenCaptured, r.ID, "", "seats are CONFIRMED but the money is not captured: the provider kept %d of the amount %d %s and the payment state is %s, want %s",
				net, r.Amount, r.Currency, r.PaymentState, Paid)
		case r.State != Confirmed && net > 0:
			add(RuleConfirmedExactlyWhenCaptured, r.ID, "", "the provider kept %d %s but the seats are %s, not CONFIRMED",
				net, r.Currency, r.State)
		}
	}
}

// samePayload compares JSON payloads by meaning (key order and spacing aside), other bytes
// exactly.
func samePayload(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}

func clip(b []byte) string {
	const n = 120
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// checkRefundsSettled requires every refund to have succeeded unless its reservation is in the
// backlog. A reservation the checker does not know is judged too: nothing else watches it.
func checkRefundsSettled(s Snapshot, res map[string]Reservation, add addFunc) {
	for _, p := range s.Payments {
		if p.RefundsPending == 0 && p.RefundsFailed == 0 {
			continue
		}
		if r, ok := res[p.ReservationID]; ok && r.InReconciliation {
			continue
		}
		add(RuleRefundSettled, p.ReservationID, "", "PaymentIntent %s has %d refunds pending and %d failed (refunded %d of %d captured %s) and its reservation is not in the reconciliation backlog",
			p.PaymentIntentID, p.RefundsPending, p.RefundsFailed, p.Refunded, p.Captured, p.Currency)
	}
}

// settledFinal reports whether a reservation reached an ending nothing more needs doing for:
// confirmed and paid, or released with its payment never started, failed, voided or refunded.
func settledFinal(r Reservation) bool {
	switch r.State {
	case Confirmed:
		return r.PaymentState == Paid
	case Released:
		switch r.PaymentState {
		case "", "NOT_STARTED", "FAILED", "CANCELED", "REFUNDED":
			return true
		}
	}
	return false
}

// checkNeedsPersonBacklogged holds every execution that gave up to its reservation's fate: in
// the backlog, or settled after all (the sweeper and the reconciler keep settling what an
// execution left). A needs-a-person execution whose reservation was never written (a claim
// that failed before its transaction) held nothing and charged nothing, so it is not judged;
// nor, as no-stale-hold judges it, one whose hold is within its deadline plus the sweeper's
// grace: the sweeper settles it when the hold lapses.
func checkNeedsPersonBacklogged(s Snapshot, res map[string]Reservation, add addFunc) {
	for _, e := range s.Executions {
		if !e.NeedsPerson {
			continue
		}
		r, ok := res[e.Name]
		if !ok || r.InReconciliation || settledFinal(r) || sweeperStillDue(s, r) {
			continue
		}
		add(RuleNeedsPersonBacklogged, e.Name, "", "execution %s ended %s (%s), needing a person, but its reservation is %s with payment %s, neither settled nor in the reconciliation backlog",
			e.ARN, e.Outcome, e.Status, r.State, r.PaymentState)
	}
}

// sweeperStillDue: the reservation still holds its seats within its deadline plus the
// sweeper's grace, so the sweeper has not yet been due to settle it.
func sweeperStillDue(s Snapshot, r Reservation) bool {
	return (r.State == Held || r.State == PaymentPending) && !s.Now.After(r.HoldExpiresAt.Add(s.Grace))
}

// checkConsumerAppliedOnce compares what the relay published with what the consumer recorded
// and sent. Redeliveries of one event carry one id, so several sends of one id are one effect
// at a channel that dedupes by it, as the consumer's contract requires of channels.
func checkConsumerAppliedOnce(s Snapshot, add addFunc) {
	c := s.Consumer
	if c == nil {
		return
	}
	type event struct{ typ, reservationID string }
	published := map[string]event{}
	var order []string
	for _, p := range s.Published {
		if _, seen := published[p.EventID]; seen {
			continue
		}
		var env struct {
			Type          string `json:"type"`
			ReservationID string `json:"reservationId"`
		}
		_ = json.Unmarshal(p.Payload, &env)
		published[p.EventID] = event{env.Type, env.ReservationID}
		order = append(order, p.EventID)
	}
	records := make(map[string]string, len(c.Records))
	for _, r := range c.Records {
		records[r.EventID] = r.State
	}
	sends := map[string]int{}
	for _, id := range c.Sent {
		sends[id]++
	}
	sort.Strings(order)
	for _, id := range order {
		ev := published[id]
		if !c.Handled[ev.typ] {
			continue
		}
		state, recorded := records[id]
		switch {
		case !recorded:
			add(RuleConsumerAppliedOnce, ev.reservationID, "", "event %s (%s) was published but the consumer never recorded it", id, ev.typ)
		case state == ConsumerSent && sends[id] == 0:
			add(RuleConsumerAppliedOnce, ev.reservationID, "", "event %s (%s) is recorded SENT but no notification was sent", id, ev.typ)
		case state == ConsumerStale && sends[id] > 0:
			add(RuleConsumerAppliedOnce, ev.reservationID, "", "event %s (%s) is recorded STALE yet was sent %d times", id, ev.typ, sends[id])
		case state != ConsumerSent && state != ConsumerStale:
			add(RuleConsumerAppliedOnce, ev.reservationID, "", "event %s (%s) was left %s: the consumer never finished it (sent %d times)", id, ev.typ, state, sends[id])
		}
	}
	var ghosts []string
	for id := range records {
		if _, ok := published[id]; !ok {
			ghosts = append(ghosts, id)
		}
	}
	for id := range sends {
		if _, ok := published[id]; !ok && records[id] == "" {
			ghosts = append(ghosts, id)
		}
	}
	sort.Strings(ghosts)
	for _, id := range ghosts {
		add(RuleConsumerAppliedOnce, "", "", "the consumer recorded or sent event %s, which was never published (record %q, sent %d times)", id, records[id], sends[id])
	}
}
