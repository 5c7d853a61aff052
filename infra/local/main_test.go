package main

import (
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/loadgen"
)

func TestParseMix(t *testing.T) {
	cases := []struct {
		name, in string
		want     loadgen.Mix
		err      string
	}{
		{"demo default", defaultsFor("demo").mix, loadgen.Mix{"pays": 55, "declines": 10, "3ds-late": 15, "3ds-never": 10, "late-auth": 10}, ""},
		{"spaces", " pays=1 , declines=0.5 ", loadgen.Mix{"pays": 1, "declines": 0.5}, ""},
		{"unknown", "pays=1,teleports=2", nil, "unknown behaviour"},
		{"no weight", "pays", nil, "not name=weight"},
		{"negative", "pays=-1", nil, "bad weight"},
		{"empty", "", nil, "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseMix(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestSaleFlagsScaleTheClock(t *testing.T) {
	f, err := parseSaleFlags("load", []string{"-buyers", "10000", "-seats", "1000", "-scale", "30"})
	if err != nil {
		t.Fatal(err)
	}
	if f.buyers != 10000 || f.seats != 1000 || f.reportPath != "reports/load.html" {
		t.Fatalf("flags %+v", f)
	}
	cfg := stackConfig(f, nil)
	if cfg.Hold != 10*time.Minute || cfg.Payments.LateAuthorizationDelay <= cfg.Hold {
		t.Fatalf("hold %s, late authorization %s: a late authorization must land after the hold", cfg.Hold, cfg.Payments.LateAuthorizationDelay)
	}
	plan := faultPlan(f)
	if plan.ProviderFailBefore != 2 || plan.LambdaFailAfter != 2 || plan.Spread != 20*time.Second {
		t.Fatalf("fault plan %+v", plan)
	}
	f.faultCap = 0
	if plan := faultPlan(f); plan.ProviderFailBefore != 20 || plan.LambdaFailAfter != 10 {
		t.Fatalf("uncapped fault plan %+v", plan)
	}
	if _, err := parseSaleFlags("demo", []string{"-scale", "0"}); err == nil {
		t.Fatal("zero scale accepted")
	}
	if _, err := parseSaleFlags("demo", []string{"extra"}); err == nil {
		t.Fatal("stray argument accepted")
	}
}
