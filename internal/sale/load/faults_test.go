package load

import (
	"strings"
	"testing"
)

func TestParseChaosReadsRatesCapsAndAll(t *testing.T) {
	cases := []struct {
		in      string
		want    Chaos
		wantErr string
	}{
		{in: "", want: Chaos{}},
		{in: "dynamodb-throttle=0.01/20, customer-cancel=0.1", want: Chaos{DynamoDBThrottle: {Rate: 0.01, Cap: 20}, CustomerCancel: {Rate: 0.1}}},
		{in: "all=0.5,provider-down=0", want: func() Chaos {
			c := Chaos{}
			for _, x := range FaultClasses {
				c[x] = FaultRate{Rate: 0.5}
			}
			c[ProviderDown] = FaultRate{}
			return c
		}()},
		{in: "dynamodb-throttle", wantErr: "not class=rate"},
		{in: "dynamodb-throttle=2", wantErr: "from 0 to 1"},
		{in: "dynamodb-throttle=0.1/-1", wantErr: "whole number"},
		{in: "sweeper-on-fire=0.1", wantErr: "unknown fault class"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseChaos(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for c, r := range tc.want {
				if got[c] != r {
					t.Errorf("%s: got %+v, want %+v", c, got[c], r)
				}
			}
			// What String renders parses back to the classes that are on.
			back, err := ParseChaos(got.String())
			if err != nil {
				t.Fatal(err)
			}
			for c, r := range got {
				if r.Rate > 0 && back[c] != r {
					t.Errorf("round trip of %s: %+v, want %+v", c, back[c], r)
				}
			}
		})
	}
}

// A class strikes at about its rate, never past its cap, and a class that is off never does;
// every strike is counted.
func TestInjectorStrikesAtItsRateUpToItsCap(t *testing.T) {
	in := NewInjector(Chaos{DynamoDBThrottle: {Rate: 0.25}, CustomerCancel: {Rate: 1, Cap: 3}}, 7)
	hits := 0
	for range 4000 {
		if in.Strike(DynamoDBThrottle) {
			hits++
		}
		in.Strike(CustomerCancel)
		if in.Strike(ProviderDown) {
			t.Fatal("a class that is off struck")
		}
	}
	if hits < 800 || hits > 1200 {
		t.Fatalf("%d strikes of 4000 at rate 0.25", hits)
	}
	got := in.Injected()
	if got[DynamoDBThrottle] != hits || got[CustomerCancel] != 3 {
		t.Fatalf("counts %v, want throttle %d and cancel 3", got, hits)
	}
	if _, listed := got[ProviderDown]; listed {
		t.Fatalf("a class that is off is listed: %v", got)
	}
}

// A fault armed now and hit later is counted when it hits, and the cap counts what hit.
func TestInjectorCountsArmedFaultsWhenTheyHit(t *testing.T) {
	in := NewInjector(Chaos{LambdaTimeout: {Rate: 0.5, Cap: 2}}, 1)
	if !in.Allow(LambdaTimeout) || in.Injected()[LambdaTimeout] != 0 {
		t.Fatal("Allow must not count")
	}
	in.Count(LambdaTimeout)
	in.Count(LambdaTimeout)
	if in.Allow(LambdaTimeout) {
		t.Fatal("Allow let a third fault past a cap of two")
	}
	if line := InjectedLine(in.Injected()); line != "lambda-timeout 2" {
		t.Fatalf("line %q", line)
	}
}
