package invariants

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// healthy is a settled sale that keeps every promise: r1 confirmed and paid for two seats, r2
// declined and voided, r3 expired with its 3-D Secure never completed, r4 paid late and
// refunded, r5 confirmed but its capture is unknown and it sits in the reconciliation backlog
// (seat still protected, execution still running), rc canceled by the customer after a late
// capture and refunded in full, and one free seat.
func healthy() Snapshot {
	past := now.Add(-time.Hour)
	return Snapshot{
		Now:   now,
		Grace: 2 * time.Minute,
		Seats: []Seat{
			{EventID: "e1", SeatID: "A1", State: Confirmed, ReservationID: "r1", HoldExpiresAt: past, Version: 4, PriceMinor: 1200, Currency: "EUR"},
			{EventID: "e1", SeatID: "A2", State: Confirmed, ReservationID: "r1", HoldExpiresAt: past, Version: 4, PriceMinor: 800, Currency: "EUR"},
			{EventID: "e1", SeatID: "A3", State: Available, Version: 3, PriceMinor: 1000, Currency: "EUR"},
			{EventID: "e1", SeatID: "A4", State: Available, Version: 2, PriceMinor: 1000, Currency: "EUR"},
			{EventID: "e1", SeatID: "A5", State: PaymentPending, ReservationID: "r5", HoldExpiresAt: past, Version: 3, PriceMinor: 1000, Currency: "EUR"},
			{EventID: "e1", SeatID: "A6", State: Available, PriceMinor: 1000, Currency: "EUR"},
		},
		Reservations: []Reservation{
			{ID: "r1", EventID: "e1", SeatIDs: []string{"A1", "A2"}, State: Confirmed, PaymentState: "PAID", Amount: 2000, Currency: "eur", PaymentIntentID: "pi_1", HoldExpiresAt: past},
			{ID: "r2", EventID: "e1", SeatIDs: []string{"A3"}, State: Released, PaymentState: "FAILED", Amount: 1000, Currency: "eur", PaymentIntentID: "pi_2", HoldExpiresAt: past},
			{ID: "r3", EventID: "e1", SeatIDs: []string{"A3"}, State: Released, PaymentState: "CANCELED", Amount: 1000, Currency: "eur", PaymentIntentID: "pi_3", HoldExpiresAt: past},
			{ID: "r4", EventID: "e1", SeatIDs: []string{"A4"}, State: Released, PaymentState: "REFUNDED", Amount: 1000, Currency: "eur", PaymentIntentID: "pi_4", HoldExpiresAt: past},
			{ID: "r5", EventID: "e1", SeatIDs: []string{"A5"}, State: PaymentPending, PaymentState: NeedsReconciliation, Amount: 1000, Currency: "eur", PaymentIntentID: "pi_5", HoldExpiresAt: past, InReconciliation: true},
			{ID: "rc", EventID: "e1", SeatIDs: []string{"A3"}, State: Released, PaymentState: "REFUNDED", Amount: 1000, Currency: "eur", PaymentIntentID: "pi_c", HoldExpiresAt: past, CustomerCanceled: true},
		},
		Payments: []Payment{
			{ReservationID: "r1", PaymentIntentID: "pi_1", Status: "succeeded", Amount: 2000, Currency: "eur", Captured: 2000},
			{ReservationID: "r2", PaymentIntentID: "pi_2", Status: "canceled", Amount: 1000, Currency: "eur"},
			{ReservationID: "r3", PaymentIntentID: "pi_3", Status: "canceled", Amount: 1000, Currency: "eur"},
			{ReservationID: "r4", PaymentIntentID: "pi_4", Status: "succeeded", Amount: 1000, Currency: "eur", Captured: 1000, Refunded: 1000},
			{ReservationID: "r5", PaymentIntentID: "pi_5", Status: "requires_capture", Amount: 1000, Currency: "eur"},
			{ReservationID: "rc", PaymentIntentID: "pi_c", Status: "succeeded", Amount: 1000, Currency: "eur", Captured: 1000, Refunded: 1000},
		},
		// A decline (r2), a voided payment (r3) and a cancel (rc) are business endings: their
		// executions succeed like the sales' (r1, r4).
		Executions: []Execution{
			{Name: "r1", ARN: "arn:r1", Status: "SUCCEEDED"},
			{Name: "r2", ARN: "arn:r2", Status: "SUCCEEDED"},
			{Name: "r3", ARN: "arn:r3", Status: "SUCCEEDED"},
			{Name: "r4", ARN: "arn:r4", Status: "SUCCEEDED"},
			{Name: "r5", ARN: "arn:r5", Status: ExecRunning},
			{Name: "rc", ARN: "arn:rc", Status: "SUCCEEDED"},
		},
		Published: []Publication{
			{EventID: "ev1", Payload: []byte(`{"type":"SeatHeld","v":1}`)},
			{EventID: "ev1", Payload: []byte(`{ "v": 1, "type": "SeatHeld" }`)}, // redelivered, same meaning
			{EventID: "ev2", Payload: []byte(`{"type":"ReservationConfirmed","reservationId":"r1"}`)},
		},
		// The consumer acts on the confirmation (sent once) and ignores the hold.
		Consumer: &ConsumerView{
			Records: []ConsumerRecord{{EventID: "ev2", State: ConsumerSent}},
			Sent:    []string{"ev2"},
			Handled: map[string]bool{"ReservationConfirmed": true, "SeatHeld": false},
		},
	}
}

func TestHealthySalePasses(t *testing.T) {
	v := Check(healthy())
	if !v.OK() {
		t.Fatalf("healthy sale: %s", v)
	}
	if v.SoldSeats != 2 || v.PaidSeats != 2 || v.Backlog != 1 {
		t.Fatalf("sold=%d paid=%d backlog=%d, want 2 2 1", v.SoldSeats, v.PaidSeats, v.Backlog)
	}
	if !strings.Contains(v.String(), "PASS") {
		t.Fatalf("verdict string %q", v.String())
	}
}

// Each case breaks the healthy sale in one way; the checker must name the rule (and only the
// rules the damage really breaks), with the reservation and seat where there is one.
func TestEveryRuleBites(t *testing.T) {
	cases := []struct {
		name    string
		break_  func(s *Snapshot)
		want    []Rule
		resID   string
		seatKey string
	}{
		{
			name: "two live holds on one seat (claim without its condition)",
			break_: func(s *Snapshot) {
				s.Seats[5] = Seat{EventID: "e1", SeatID: "A6", State: Held, ReservationID: "r7", HoldExpiresAt: now.Add(time.Minute)}
				s.Reservations = append(s.Reservations,
					Reservation{ID: "r6", EventID: "e1", SeatIDs: []string{"A6"}, State: Held, HoldExpiresAt: now.Add(time.Minute)},
					Reservation{ID: "r7", EventID: "e1", SeatIDs: []string{"A6"}, State: Held, HoldExpiresAt: now.Add(time.Minute)})
			},
			want: []Rule{RuleSeatSingleOwner}, resID: "r6", seatKey: "e1#A6",
		},
		{
			name: "seat item owned by a reservation that does not exist",
			break_: func(s *Snapshot) {
				s.Seats[5] = Seat{EventID: "e1", SeatID: "A6", State: Held, ReservationID: "ghost", HoldExpiresAt: now.Add(time.Minute)}
			},
			want: []Rule{RuleSeatSingleOwner}, resID: "ghost", seatKey: "e1#A6",
		},
		{
			name:   "one customer holds three reservations under a cap of two (the gate without its slots)",
			break_: func(s *Snapshot) { hoard(s, 3) },
			want:   []Rule{RuleCustomerWithinHoldCap},
		},
		{
			name: "two confirmed reservations sold the same seat (confirm without its owner condition)",
			break_: func(s *Snapshot) {
				s.Seats[2] = Seat{EventID: "e1", SeatID: "A3", State: Confirmed, ReservationID: "r9", PriceMinor: 1000, Currency: "EUR"}
				s.Reservations = append(s.Reservations,
					Reservation{ID: "r8", EventID: "e1", SeatIDs: []string{"A3"}, State: Confirmed, PaymentState: Paid, Amount: 1000},
					Reservation{ID: "r9", EventID: "e1", SeatIDs: []string{"A3"}, State: Confirmed, PaymentState: Paid, Amount: 1000})
				s.Payments = append(s.Payments,
					Payment{ReservationID: "r8", PaymentIntentID: "pi_8", Status: "succeeded", Amount: 1000, Currency: "eur", Captured: 1000},
					Payment{ReservationID: "r9", PaymentIntentID: "pi_9", Status: "succeeded", Amount: 1000, Currency: "eur", Captured: 1000})
			},
			want: []Rule{RuleSeatSingleOwner, RuleConfirmedOwnsSeats, RuleSoldEqualsCaptured}, resID: "r8", seatKey: "e1#A3",
		},
		{
			name: "confirmed reservation whose seat is still PAYMENT_PENDING",
			break_: func(s *Snapshot) {
				s.Seats[1].State = PaymentPending
				s.Seats[1].HoldExpiresAt = now.Add(time.Minute)
			},
			want: []Rule{RuleConfirmedOwnsSeats, RuleSoldEqualsCaptured}, resID: "r1", seatKey: "e1#A2",
		},
		{
			name: "capture on a released reservation, never refunded",
			break_: func(s *Snapshot) {
				s.Payments[3].Refunded = 0
			},
			want: []Rule{RuleCaptureBelongsToConfirmed, RuleSoldEqualsCaptured, RuleConfirmedExactlyWhenCaptured}, resID: "r4",
		},
		{
			name: "capture for a reservation that does not exist",
			break_: func(s *Snapshot) {
				s.Payments = append(s.Payments, Payment{ReservationID: "nobody", PaymentIntentID: "pi_x", Status: "succeeded", Amount: 500, Captured: 500})
			},
			want: []Rule{RuleCaptureBelongsToConfirmed, RuleSoldEqualsCaptured}, resID: "nobody",
		},
		{
			name: "authorization left open on a released reservation",
			break_: func(s *Snapshot) {
				s.Payments[1].Status = PIRequiresCapture
			},
			want: []Rule{RuleNoOpenAuthorization}, resID: "r2",
		},
		{
			name: "hold past deadline plus grace with no reconciliation record",
			break_: func(s *Snapshot) {
				s.Seats[5] = Seat{EventID: "e1", SeatID: "A6", State: Held, ReservationID: "r6", HoldExpiresAt: now.Add(-3 * time.Minute)}
				s.Reservations = append(s.Reservations,
					Reservation{ID: "r6", EventID: "e1", SeatIDs: []string{"A6"}, State: Held, HoldExpiresAt: now.Add(-3 * time.Minute)})
				s.Executions = append(s.Executions, Execution{Name: "r6", Status: "ABORTED"})
			},
			want: []Rule{RuleNoStaleHold}, resID: "r6", seatKey: "e1#A6",
		},
		{
			name: "payment pending seat leaves the backlog without being resolved",
			break_: func(s *Snapshot) {
				s.Reservations[4].InReconciliation = false
				s.Reservations[4].PaymentState = "AUTHORIZED"
				s.Executions[4].Status = "SUCCEEDED"
			},
			want: []Rule{RuleNoStaleHold}, resID: "r5", seatKey: "e1#A5",
		},
		{
			name: "execution still running outside the backlog",
			break_: func(s *Snapshot) {
				s.Executions[1].Status = ExecRunning
			},
			want: []Rule{RuleExecutionSettled}, resID: "r2",
		},
		{
			name: "outbox event published twice with different payloads",
			break_: func(s *Snapshot) {
				s.Published = append(s.Published, Publication{EventID: "ev2", Payload: []byte(`{"type":"ReservationReleased"}`)})
			},
			want: []Rule{RuleOutboxPayloadStable},
		},
		{
			name: "confirmed reservation without a capture",
			break_: func(s *Snapshot) {
				s.Payments[0].Captured = 0
				s.Payments[0].Status = "requires_capture"
			},
			want: []Rule{RuleSoldEqualsCaptured, RuleConfirmedExactlyWhenCaptured}, resID: "r1",
		},
		{
			name: "capture for a client-chosen amount below the seat prices",
			break_: func(s *Snapshot) {
				// The reservation recorded what the client asked to pay, and the provider took it.
				s.Reservations[0].Amount = 2
				s.Payments[0].Amount, s.Payments[0].Captured = 2, 2
			},
			want: []Rule{RuleCaptureMatchesSeatPrices}, resID: "r1",
		},
		{
			name: "refunded capture in another currency than the seat",
			break_: func(s *Snapshot) {
				s.Payments[3].Currency = "usd"
			},
			want: []Rule{RuleCaptureMatchesSeatPrices}, resID: "r4",
		},
		{
			name: "capture for a seat that has no price",
			break_: func(s *Snapshot) {
				s.Seats[1].PriceMinor, s.Seats[1].Currency = 0, ""
			},
			want: []Rule{RuleCaptureMatchesSeatPrices}, resID: "r1",
		},
		{
			name: "confirmed reservation captured for less than its amount",
			break_: func(s *Snapshot) {
				s.Payments[0].Refunded = 500
			},
			want: []Rule{RuleSoldEqualsCaptured, RuleConfirmedExactlyWhenCaptured}, resID: "r1",
		},
		{
			name: "customer cancel recorded yet confirmed and charged (no other rule sees it)",
			break_: func(s *Snapshot) {
				s.Reservations[0].CustomerCanceled = true
			},
			want: []Rule{RuleNoChargeForAcknowledgedCancel}, resID: "r1",
		},
		{
			name: "customer cancel refunded only in part",
			break_: func(s *Snapshot) {
				s.Payments[5].Refunded = 400
			},
			want: []Rule{RuleCaptureBelongsToConfirmed, RuleSoldEqualsCaptured, RuleNoChargeForAcknowledgedCancel, RuleConfirmedExactlyWhenCaptured}, resID: "rc",
		},
		{
			name: "a second refund failed outside the backlog (no other rule sees it)",
			break_: func(s *Snapshot) {
				s.Payments[3].RefundsFailed = 1
			},
			want: []Rule{RuleRefundSettled}, resID: "r4",
		},
		{
			name:   "an execution gave up on a hold that lapsed past grace, outside the backlog (no other rule sees it)",
			break_: func(s *Snapshot) { abandonLapsedHold(s) },
			want:   []Rule{RuleNeedsPersonBacklogged}, resID: "r6",
		},
		{
			name: "a confirmation was published and the consumer never recorded it",
			break_: func(s *Snapshot) {
				s.Consumer.Records, s.Consumer.Sent = nil, nil
			},
			want: []Rule{RuleConsumerAppliedOnce}, resID: "r1",
		},
		{
			name: "confirmed and captured but the payment state never became PAID (no other rule sees it)",
			break_: func(s *Snapshot) {
				s.Reservations[0].PaymentState = "CAPTURE_PENDING"
			},
			want: []Rule{RuleConfirmedExactlyWhenCaptured}, resID: "r1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := healthy()
			tc.break_(&s)
			v := Check(s)
			if v.OK() {
				t.Fatal("checker passed a broken sale")
			}
			got := map[Rule]bool{}
			for _, x := range v.Violations {
				got[x.Rule] = true
			}
			for _, r := range tc.want {
				if !got[r] {
					t.Errorf("rule %s not reported; verdict:\n%s", r, v)
				}
			}
			for r := range got {
				if !contains(tc.want, r) {
					t.Errorf("unexpected rule %s reported; verdict:\n%s", r, v)
				}
			}
			first := firstOf(v, tc.want[0])
			if tc.resID != "" && first.ReservationID != tc.resID {
				t.Errorf("violation names reservation %q, want %q", first.ReservationID, tc.resID)
			}
			if tc.seatKey != "" && first.Seat != tc.seatKey {
				t.Errorf("violation names seat %q, want %q", first.Seat, tc.seatKey)
			}
			if first.Detail == "" {
				t.Error("violation has no description")
			}
			if !strings.Contains(v.String(), "FAIL") || !strings.Contains(v.String(), string(tc.want[0])) {
				t.Errorf("verdict string does not name the rule: %s", v)
			}
		})
	}
}

// An expired hold reclaimed by another buyer is not a double owner: the first reservation no
// longer lays claim to the seat once its deadline passed.
func TestExpiredHoldReclaimedIsNotDoubleOwner(t *testing.T) {
	s := healthy()
	s.Seats[5] = Seat{EventID: "e1", SeatID: "A6", State: Held, ReservationID: "r7", HoldExpiresAt: now.Add(time.Minute)}
	s.Reservations = append(s.Reservations,
		Reservation{ID: "r6", EventID: "e1", SeatIDs: []string{"A6"}, State: Held, HoldExpiresAt: now.Add(-time.Second)},
		Reservation{ID: "r7", EventID: "e1", SeatIDs: []string{"A6"}, State: Held, HoldExpiresAt: now.Add(time.Minute)})
	if v := Check(s); !v.OK() {
		t.Fatalf("reclaimed expired hold flagged: %s", v)
	}
}

// ruleCase is a change to the healthy sale and whether it breaks the rule under test.
type ruleCase struct {
	name   string
	change func(s *Snapshot)
	broken bool
}

// expectRule runs each case on a healthy sale and requires rule broken exactly when the case
// says so.
func expectRule(t *testing.T, rule Rule, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := healthy()
			tc.change(&s)
			if v := Check(s); v.Broken(rule) != tc.broken {
				t.Fatalf("rule %s broken=%v, want %v; verdict:\n%s", rule, !tc.broken, tc.broken, v)
			}
		})
	}
}

// Each fixture either keeps or breaks the promise that an acknowledged cancel is never charged,
// so the test fails whether the rule stays silent on a charge or fires on a clean cancel.
func TestAcknowledgedCancelIsNeverChargedNetOfRefunds(t *testing.T) {
	cases := []ruleCase{
		{name: "captured late and refunded in full", change: func(*Snapshot) {}},
		{name: "voided before any capture", change: func(s *Snapshot) {
			s.Payments[5].Status, s.Payments[5].Captured, s.Payments[5].Refunded = "canceled", 0, 0
			s.Reservations[5].PaymentState = "CANCELED"
		}},
		{name: "refund still outstanding while the reservation is in the reconciliation backlog", change: func(s *Snapshot) {
			s.Payments[5].Refunded = 0
			s.Reservations[5].PaymentState, s.Reservations[5].InReconciliation = "REFUND_PENDING", true
		}},
		{name: "captured on a hold whose deadline is still ahead, not judged yet", change: func(s *Snapshot) {
			s.Payments[5].Refunded = 0
			s.Reservations[5].State, s.Reservations[5].HoldExpiresAt = Held, now.Add(time.Minute)
		}},
		{name: "captured and never refunded", broken: true, change: func(s *Snapshot) {
			s.Payments[5].Refunded = 0
		}},
		{name: "captured on a hold whose deadline has passed", broken: true, change: func(s *Snapshot) {
			s.Payments[5].Refunded = 0
			s.Reservations[5].State, s.Reservations[5].HoldExpiresAt = Held, now.Add(-time.Minute)
		}},
		{name: "refunded in part", broken: true, change: func(s *Snapshot) {
			s.Payments[5].Refunded = 999
		}},
		{name: "confirmed despite the cancel and charged", broken: true, change: func(s *Snapshot) {
			s.Reservations[0].CustomerCanceled = true
		}},
	}
	expectRule(t, RuleNoChargeForAcknowledgedCancel, cases)
}

// Each fixture either keeps or breaks the per-reservation equivalence between CONFIRMED seats and
// captured money, in both directions.
func TestSeatsAreConfirmedExactlyWhenMoneyIsCaptured(t *testing.T) {
	cases := []ruleCase{
		{name: "confirmed, paid and captured in full; released ones refunded or voided", change: func(*Snapshot) {}},
		{name: "confirmed in the reconciliation backlog with the capture still unknown", change: func(s *Snapshot) {
			s.Reservations[4].State = Confirmed
			s.Seats[4].State = Confirmed
		}},
		{name: "confirmed but never captured", broken: true, change: func(s *Snapshot) {
			s.Payments[0].Status, s.Payments[0].Captured = PIRequiresCapture, 0
			s.Reservations[0].PaymentState = "AUTHORIZED"
		}},
		{name: "confirmed and captured for less than the amount", broken: true, change: func(s *Snapshot) {
			s.Payments[0].Refunded = 1
		}},
		{name: "confirmed and captured but the payment state is not PAID", broken: true, change: func(s *Snapshot) {
			s.Reservations[0].PaymentState = "CAPTURE_PENDING"
		}},
		{name: "released and still keeping captured money", broken: true, change: func(s *Snapshot) {
			s.Payments[3].Refunded = 0
		}},
		{name: "captured on a hold whose deadline has passed", broken: true, change: func(s *Snapshot) {
			s.Payments[3].Refunded = 0
			s.Reservations[3].State = PaymentPending
		}},
	}
	expectRule(t, RuleConfirmedExactlyWhenCaptured, cases)
}

func TestByRuleListsEveryRule(t *testing.T) {
	v := Check(healthy())
	if got := len(v.ByRule()); got != len(Rules) {
		t.Fatalf("ByRule has %d rules, want %d", got, len(Rules))
	}
}

func contains(rs []Rule, r Rule) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func firstOf(v Verdict, r Rule) Violation {
	for _, x := range v.Violations {
		if x.Rule == r {
			return x
		}
	}
	return Violation{}
}

// hoard gives customer "hoarder" n live holds (n ≤ 3) on the healthy sale's free seats under a
// cap of two.
func hoard(s *Snapshot, n int) {
	s.MaxActive = 2
	for i, k := range []int{2, 3, 5}[:n] {
		id := fmt.Sprintf("h%d", i+1)
		s.Seats[k].State, s.Seats[k].ReservationID, s.Seats[k].HoldExpiresAt = Held, id, now.Add(5*time.Minute)
		s.Reservations = append(s.Reservations, Reservation{ID: id, CustomerID: "hoarder", EventID: "e1",
			SeatIDs: []string{s.Seats[k].SeatID}, State: Held, HoldExpiresAt: now.Add(5 * time.Minute)})
	}
}

// The cap's control: as many live holds as the cap allows break nothing, and neither do three
// once the holds' deadlines passed.
func TestHoldsWithinTheCapPass(t *testing.T) {
	s := healthy()
	hoard(&s, 2)
	if v := Check(s); !v.OK() {
		t.Fatalf("two holds under a cap of two: %s", v)
	}
	s = healthy()
	hoard(&s, 3)
	s.Now = now.Add(5 * time.Minute)
	if v := Check(s); v.Broken(RuleCustomerWithinHoldCap) {
		t.Fatalf("three expired holds: %s", v)
	}
}

// pastItsDeadline moves hoarder's reservation h<n> and its seat past their deadline, in state
// (HELD or PAYMENT_PENDING); still within the sweeper's grace, so no other rule is due.
func pastItsDeadline(s *Snapshot, n int, state string) {
	deadline := now.Add(-time.Minute)
	for i := range s.Reservations {
		if r := &s.Reservations[i]; r.ID == fmt.Sprintf("h%d", n) {
			r.State, r.HoldExpiresAt = state, deadline
			for j := range s.Seats {
				if s.Seats[j].ReservationID == r.ID {
					s.Seats[j].State, s.Seats[j].HoldExpiresAt = state, deadline
				}
			}
		}
	}
}

// A payment pending past its deadline still holds its place under the cap until the saga or
// the sweeper ends it (the gate gives the place back only then), so it counts; a HELD hold past
// its deadline has ended as far as the cap goes.
func TestAPaymentPendingPastItsDeadlineCountsAgainstTheCap(t *testing.T) {
	expectRule(t, RuleCustomerWithinHoldCap, []ruleCase{
		{name: "two live holds and one payment pending past its deadline", broken: true, change: func(s *Snapshot) {
			hoard(s, 3)
			pastItsDeadline(s, 3, PaymentPending)
		}},
		{name: "two live holds and one HELD past its deadline", change: func(s *Snapshot) {
			hoard(s, 3)
			pastItsDeadline(s, 3, Held)
		}},
		{name: "one live hold and one payment pending past its deadline", change: func(s *Snapshot) {
			hoard(s, 2)
			pastItsDeadline(s, 2, PaymentPending)
		}},
	})
}

// abandonLiveHold gives r6 a live hold on A6 whose execution failed, needing a person, with
// the reservation outside the backlog: the sweeper is still due to settle it.
func abandonLiveHold(s *Snapshot) {
	s.Seats[5] = Seat{EventID: "e1", SeatID: "A6", State: Held, ReservationID: "r6", HoldExpiresAt: now.Add(time.Minute), PriceMinor: 1000, Currency: "EUR"}
	s.Reservations = append(s.Reservations, Reservation{ID: "r6", EventID: "e1", SeatIDs: []string{"A6"}, State: Held,
		PaymentState: "AUTHORIZING", HoldExpiresAt: now.Add(time.Minute)})
	s.Executions = append(s.Executions, Execution{Name: "r6", ARN: "arn:r6", Status: "FAILED", NeedsPerson: true, Outcome: "States.TaskFailed"})
}

// abandonLapsedHold is abandonLiveHold an hour later: r6's hold lapsed past the sweeper's
// grace and nothing settled it or put it in the backlog (its seat went back on sale).
func abandonLapsedHold(s *Snapshot) {
	abandonLiveHold(s)
	s.Seats[5] = Seat{EventID: "e1", SeatID: "A6", State: Available, PriceMinor: 1000, Currency: "EUR"}
	s.Reservations[len(s.Reservations)-1].HoldExpiresAt = now.Add(-time.Hour)
}

// Each fixture keeps or breaks the promise that no refund is left unsettled outside the
// reconciliation backlog.
func TestEveryRefundIsSettledOrBacklogged(t *testing.T) {
	expectRule(t, RuleRefundSettled, []ruleCase{
		{name: "refunds succeeded", change: func(*Snapshot) {}},
		{name: "a refund pending while the reservation is in the backlog", change: func(s *Snapshot) {
			s.Payments[3].RefundsPending, s.Payments[3].Refunded = 1, 0
			s.Reservations[3].PaymentState, s.Reservations[3].InReconciliation = "REFUND_PENDING", true
		}},
		{name: "a refund pending outside the backlog", broken: true, change: func(s *Snapshot) {
			s.Payments[3].RefundsPending, s.Payments[3].Refunded = 1, 0
		}},
		{name: "a refund failed outside the backlog", broken: true, change: func(s *Snapshot) {
			s.Payments[5].RefundsFailed, s.Payments[5].Refunded = 1, 0
		}},
		{name: "a refund pending for a reservation nobody knows", broken: true, change: func(s *Snapshot) {
			s.Payments = append(s.Payments, Payment{ReservationID: "nobody", PaymentIntentID: "pi_x", Status: "succeeded", Captured: 500, RefundsPending: 1})
		}},
	})
}

// Each fixture keeps or breaks the promise that an execution that gave up leaves its
// reservation in the backlog or settled.
func TestExecutionsNeedingAPersonAreBackloggedOrSettled(t *testing.T) {
	needsPerson := func(s *Snapshot, i int) {
		s.Executions[i].Status, s.Executions[i].NeedsPerson, s.Executions[i].Outcome = "FAILED", true, "NeedsReconciliation"
	}
	expectRule(t, RuleNeedsPersonBacklogged, []ruleCase{
		{name: "every execution ended as the business expects", change: func(*Snapshot) {}},
		{name: "gave up, and the reservation is in the backlog", change: func(s *Snapshot) { needsPerson(s, 4) }},
		{name: "gave up, and the sweeper released it with the payment voided", change: func(s *Snapshot) { needsPerson(s, 2) }},
		{name: "gave up, and the reconciler confirmed it paid", change: func(s *Snapshot) { needsPerson(s, 0) }},
		{name: "gave up before the claim wrote anything", change: func(s *Snapshot) {
			s.Executions = append(s.Executions, Execution{Name: "never-written", Status: "FAILED", NeedsPerson: true})
		}},
		{name: "gave up on a live hold the sweeper is still due to settle", change: abandonLiveHold},
		{name: "gave up on a hold that lapsed past the sweeper's grace, outside the backlog", broken: true, change: abandonLapsedHold},
		{name: "gave up with a refund still pending outside the backlog", broken: true, change: func(s *Snapshot) {
			needsPerson(s, 3)
			s.Reservations[3].PaymentState = "REFUND_PENDING"
		}},
		{name: "timed out on a confirmed reservation whose capture was never recorded", broken: true, change: func(s *Snapshot) {
			s.Executions[0].Status, s.Executions[0].NeedsPerson, s.Executions[0].Outcome = "TIMED_OUT", true, "TimedOut"
			s.Reservations[0].PaymentState = "CAPTURE_PENDING"
		}},
	})
}

// Each fixture keeps or breaks the promise that the consumer applied every published event it
// handles once: recorded SENT with a send, or STALE without one, and nothing else.
func TestConsumerAppliedEveryPublishedEventOnce(t *testing.T) {
	expectRule(t, RuleConsumerAppliedOnce, []ruleCase{
		{name: "the confirmation sent once, the ignored hold unrecorded", change: func(*Snapshot) {}},
		{name: "sent twice under one id after a lapsed lease: one effect at a deduping channel", change: func(s *Snapshot) {
			s.Consumer.Sent = append(s.Consumer.Sent, "ev2")
		}},
		{name: "a stale event recorded and not sent", change: func(s *Snapshot) {
			s.Consumer.Records[0].State, s.Consumer.Sent = ConsumerStale, nil
		}},
		{name: "no consumer ran", change: func(s *Snapshot) { s.Consumer = nil }},
		{name: "published and never recorded", broken: true, change: func(s *Snapshot) {
			s.Consumer.Records, s.Consumer.Sent = nil, nil
		}},
		{name: "left SENDING after its send", broken: true, change: func(s *Snapshot) {
			s.Consumer.Records[0].State = ConsumerSending
		}},
		{name: "recorded SENT with nothing sent", broken: true, change: func(s *Snapshot) {
			s.Consumer.Sent = nil
		}},
		{name: "recorded STALE yet sent", broken: true, change: func(s *Snapshot) {
			s.Consumer.Records[0].State = ConsumerStale
		}},
		{name: "an event of a handled type other than the first never recorded", broken: true, change: func(s *Snapshot) {
			s.Published = append(s.Published, Publication{EventID: "ev3", Payload: []byte(`{"type":"ReservationConfirmed","reservationId":"r4"}`)})
		}},
		{name: "a notification for an event never published", broken: true, change: func(s *Snapshot) {
			s.Consumer.Records = append(s.Consumer.Records, ConsumerRecord{EventID: "ghost", State: ConsumerSent})
			s.Consumer.Sent = append(s.Consumer.Sent, "ghost")
		}},
	})
}
