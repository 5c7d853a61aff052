package stack

import (
	"slices"
	"strings"
	"testing"
)

func TestPropsFromContext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ctx     map[string]any
		check   func(t *testing.T, p Props)
		wantErr string
	}{
		{name: "defaults", ctx: map[string]any{}, check: func(t *testing.T, p Props) {
			if p.Stage != "dev" || p.Production() || p.HoldSeconds != 600 || p.LateSuccessPolicy != "reacquire" {
				t.Errorf("%+v", p)
			}
		}},
		{name: "cdk.json types", ctx: map[string]any{
			"stage": "prod", "holdSeconds": float64(300), "apiRateLimit": float64(50),
			"productionStages": []any{"prod", "live"}, "alarmThresholds": map[string]any{"DLQDepth": float64(5)},
		}, check: func(t *testing.T, p Props) {
			if !p.Production() || p.HoldSeconds != 300 || p.Api.RateLimit != 50 || p.Thresholds.DLQDepth != 5 {
				t.Errorf("%+v", p)
			}
		}},
		{name: "command line strings", ctx: map[string]any{
			"stage": "live", "productionStages": "prod,live", "sweepEveryMinutes": "5", "lateSuccessPolicy": "void",
		}, check: func(t *testing.T, p Props) {
			if !p.Production() || p.SweepEveryMinutes != 5 || p.LateSuccessPolicy != "void" {
				t.Errorf("%+v", p)
			}
		}},
		{name: "command line alarm thresholds and origins", ctx: map[string]any{
			// `cdk synth -c alarmThresholds='{"DLQDepth":5}' -c allowedOrigins=https://a.example,https://b.example`
			"alarmThresholds": `{"DLQDepth":5}`, "allowedOrigins": "https://a.example, https://b.example",
		}, check: func(t *testing.T, p Props) {
			if p.Thresholds.DLQDepth != 5 || !slices.Equal(p.Api.AllowedOrigins, []string{"https://a.example", "https://b.example"}) {
				t.Errorf("thresholds %+v origins %v", p.Thresholds, p.Api.AllowedOrigins)
			}
		}},
		{name: "reserved concurrency off for a small account", ctx: map[string]any{"reservedConcurrency": "false"}, check: func(t *testing.T, p Props) {
			if !p.WithoutReservedConcurrency {
				t.Error("-c reservedConcurrency=false left the reservations in")
			}
		}},
		{name: "reserved concurrency neither true nor false", ctx: map[string]any{"reservedConcurrency": "no"}, wantErr: "reservedConcurrency"},
		{name: "alarm thresholds that are no JSON object", ctx: map[string]any{"alarmThresholds": "DLQDepth=5"}, wantErr: "alarmThresholds"},
		{name: "not a number", ctx: map[string]any{"holdSeconds": "soon"}, wantErr: "holdSeconds"},
		{name: "fractional whole number", ctx: map[string]any{"holdSeconds": float64(1.5)}, wantErr: "whole number"},
		{name: "unknown threshold", ctx: map[string]any{"alarmThresholds": map[string]any{"Nope": float64(1)}}, wantErr: "alarmThresholds.Nope"},
		{name: "negative threshold", ctx: map[string]any{"alarmThresholds": map[string]any{"DLQDepth": float64(-1)}}, wantErr: "positive"},
		{name: "stage not a string", ctx: map[string]any{"stage": float64(3)}, wantErr: "stage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PropsFromContext(func(k string) any { return tc.ctx[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

func TestValidateRefusesBrokenSettings(t *testing.T) {
	base := DefaultProps()
	base.AssetDir = "/assets"
	if err := base.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(p *Props)
		want   string
	}{
		{"bad stage", func(p *Props) { p.Stage = "no spaces" }, "stage"},
		{"empty stage", func(p *Props) { p.Stage = "" }, "stage"},
		{"policy", func(p *Props) { p.LateSuccessPolicy = "keep" }, "late-success"},
		{"hold", func(p *Props) { p.HoldSeconds = 0 }, "hold"},
		{"retention", func(p *Props) { p.LogRetentionDays = 2 }, "retention"},
		{"throttle", func(p *Props) { p.Api.BurstLimit = 0 }, "throttling"},
		{"too many seats for one transaction", func(p *Props) { p.Api.MaxSeatsPerReservation = 100 }, "seats"},
		{"relay batch", func(p *Props) { p.Events.RelayBatchSize = 0 }, "batch"},
		{"a sweep period longer than the alarms'", func(p *Props) { p.SweepEveryMinutes = 6 }, "sweep period"},
		{"no assets", func(p *Props) { p.AssetDir = "" }, "asset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			tc.mutate(&p)
			if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
