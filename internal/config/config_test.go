package config

import (
	"strings"
	"testing"
	"time"
)

func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	cfg, err := FromLookup(lookupFrom(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hold != DefaultHold || cfg.MaxSeats != DefaultMaxSeats || cfg.LateSuccessPolicy != "reacquire" || cfg.SweepGrace != DefaultSweepGrace {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
}

func TestReadsEveryField(t *testing.T) {
	cfg, err := FromLookup(lookupFrom(map[string]string{
		EnvTablePrefix: "prod-", EnvHoldSeconds: "300", EnvMaxSeats: "4", EnvLateSuccessPolicy: "void",
		EnvStateMachineARN: "arn:sm", EnvDynamoDBEndpoint: "http://127.0.0.1:8000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tables.Of("Seats") != "prod-Seats" || cfg.Hold != 300*time.Second || cfg.MaxSeats != 4 ||
		cfg.LateSuccessPolicy != "void" || cfg.StateMachineARN != "arn:sm" || cfg.DynamoDBEndpoint != "http://127.0.0.1:8000" {
		t.Fatalf("fields not read: %+v", cfg)
	}
}

func TestRejectsBadValues(t *testing.T) {
	cases := map[string]map[string]string{
		"hold not a number": {EnvHoldSeconds: "ten"},
		"hold zero":         {EnvHoldSeconds: "0"},
		"too many seats":    {EnvMaxSeats: "100"},
		"unknown policy":    {EnvLateSuccessPolicy: "hope"},
		"negative grace":    {EnvSweepGraceSeconds: "-5"},
	}
	for name, env := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := FromLookup(lookupFrom(env))
			if err == nil {
				t.Fatal("want an error")
			}
			for k := range env {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
}
