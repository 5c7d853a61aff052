package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/sale/invariants"
	"github.com/seatsaga/seatsaga/internal/sale/load"
)

// A failed seed names each reservation a rule broke once, sorted, and leaves out sale-wide
// violations, which name none.
func TestBrokenReservationsNameEachOnce(t *testing.T) {
	v := invariants.Verdict{Violations: []invariants.Violation{
		{Rule: invariants.RuleNoStaleHold, ReservationID: "r2"},
		{Rule: invariants.RuleSoldEqualsCaptured},
		{Rule: invariants.RuleConfirmedOwnsSeats, ReservationID: "r1"},
		{Rule: invariants.RuleNoStaleHold, ReservationID: "r2", Seat: "e#A2"},
	}}
	if got := brokenReservations(v); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Fatalf("broken %v, want [r1 r2]", got)
	}
}

// The total adds every seed's figures and faults, and counts the seeds that passed.
func TestSoakTotalAddsTheSeeds(t *testing.T) {
	total := soakTotal([]soakSeed{
		{Seed: 1, Pass: true, Sold: 10, Paid: 10, Faults: map[load.FaultClass]int{load.DynamoDBThrottle: 2, load.CustomerCancel: 1}},
		{Seed: 2, Sold: 5, Paid: 4, Backlog: 1, Faults: map[load.FaultClass]int{load.DynamoDBThrottle: 3}},
	})
	for _, want := range []string{"1 of 2 seeds passed", "sold 15", "paid 14", "backlog 1", "dynamodb-throttle 5", "customer-cancel 1"} {
		if !strings.Contains(total, want) {
			t.Errorf("total %q lacks %q", total, want)
		}
	}
	if line := soakLine(soakSeed{Seed: 2, Err: "boom"}); !strings.Contains(line, "FAIL") || !strings.Contains(line, "boom") {
		t.Errorf("failed seed's line %q", line)
	}
}
