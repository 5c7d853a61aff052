package config

import (
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	cfg, err := FromLookup(MapLookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hold != DefaultHold || cfg.MaxSeats != DefaultMaxSeats || cfg.LateSuccessPolicy != "reacquire" || cfg.SweepGrace != DefaultSweepGrace {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
}

func TestReadsEveryField(t *testing.T) {
	cfg, err := FromLookup(MapLookup(map[string]string{
		EnvTablePrefix: "prod-", EnvHoldSeconds: "300", EnvMaxSeats: "4", EnvLateSuccessPolicy: "void",
		EnvStateMachineARN: "arn:sm",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tables.Of("Seats") != "prod-Seats" || cfg.Hold != 300*time.Second || cfg.MaxSeats != 4 ||
		cfg.LateSuccessPolicy != "void" || cfg.StateMachineARN != "arn:sm" {
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
			_, err := FromLookup(MapLookup(env))
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

// MapLookup tells a variable set to "" from one not set at all, as os.LookupEnv does.
func TestMapLookupTellsEmptyFromUnset(t *testing.T) {
	lookup := MapLookup(map[string]string{"SET": "v", "EMPTY": ""})
	for name, want := range map[string]struct {
		v  string
		ok bool
	}{"SET": {"v", true}, "EMPTY": {"", true}, "UNSET": {"", false}} {
		if v, ok := lookup(name); v != want.v || ok != want.ok {
			t.Errorf("%s: got %q, %v; want %q, %v", name, v, ok, want.v, want.ok)
		}
	}
	if _, ok := MapLookup(nil)("ANY"); ok {
		t.Error("a nil map has a variable")
	}
}
