package stack

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Context keys the app reads (cdk.json "context" or `cdk synth -c key=value`).
const (
	CtxStage                  = "stage"
	CtxProductionStages       = "productionStages"
	CtxLateSuccessPolicy      = "lateSuccessPolicy"
	CtxHoldSeconds            = "holdSeconds"
	CtxLogRetentionDays       = "logRetentionDays"
	CtxSweepEveryMinutes      = "sweepEveryMinutes"
	CtxSweepGraceSeconds      = "sweepGraceSeconds"
	CtxAdmissionLeaseSeconds  = "admissionLeaseSeconds"
	CtxMaxActiveReservations  = "maxActiveReservations"
	CtxApiRateLimit           = "apiRateLimit"
	CtxApiBurstLimit          = "apiBurstLimit"
	CtxMaxSeatsPerReservation = "maxSeatsPerReservation"
	CtxUserPoolArn            = "userPoolArn"
	CtxRelayBatchSize         = "relayBatchSize"
	CtxRelayRetryAttempts     = "relayRetryAttempts"
	CtxAlarmThresholds        = "alarmThresholds"
	CtxAllowedOrigins         = "allowedOrigins"
	CtxSESFromEmail           = "sesFromEmail"
	CtxSESVerifiedDomain      = "sesVerifiedDomain"
	CtxReservedConcurrency    = "reservedConcurrency"
)

// PropsFromContext overlays the context values on DefaultProps. get returns nil for an absent
// key; values come as JSON types from cdk.json and as strings from the command line.
func PropsFromContext(get func(key string) any) (Props, error) {
	p := DefaultProps()
	var errs []string
	str := func(key string, dst *string) {
		if v := get(key); v != nil {
			s, ok := v.(string)
			if !ok {
				errs = append(errs, fmt.Sprintf("%s: want a string, got %v", key, v))
				return
			}
			*dst = s
		}
	}
	num := func(key string, dst *float64) {
		v := get(key)
		if v == nil {
			return
		}
		f, err := toFloat(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", key, err))
			return
		}
		*dst = f
	}
	integer := func(key string, dst *int) {
		f := float64(*dst)
		num(key, &f)
		if f != float64(int(f)) {
			errs = append(errs, fmt.Sprintf("%s: want a whole number, got %v", key, f))
			return
		}
		*dst = int(f)
	}

	str(CtxStage, &p.Stage)
	if v := get(CtxProductionStages); v != nil {
		switch s := v.(type) {
		case string:
			p.ProductionStages = strings.Split(s, ",")
		case []any:
			for _, e := range s {
				p.ProductionStages = append(p.ProductionStages, fmt.Sprint(e))
			}
		default:
			errs = append(errs, fmt.Sprintf("%s: want a list or a comma-separated string", CtxProductionStages))
		}
	}
	str(CtxLateSuccessPolicy, &p.LateSuccessPolicy)
	integer(CtxHoldSeconds, &p.HoldSeconds)
	integer(CtxLogRetentionDays, &p.LogRetentionDays)
	integer(CtxSweepEveryMinutes, &p.SweepEveryMinutes)
	integer(CtxSweepGraceSeconds, &p.SweepGraceSeconds)
	integer(CtxAdmissionLeaseSeconds, &p.AdmissionLeaseSeconds)
	integer(CtxMaxActiveReservations, &p.Api.MaxActiveReservations)
	num(CtxApiRateLimit, &p.Api.RateLimit)
	num(CtxApiBurstLimit, &p.Api.BurstLimit)
	integer(CtxMaxSeatsPerReservation, &p.Api.MaxSeatsPerReservation)
	str(CtxUserPoolArn, &p.Api.UserPoolArn)
	integer(CtxRelayBatchSize, &p.Events.RelayBatchSize)
	integer(CtxRelayRetryAttempts, &p.Events.RelayRetryAttempts)
	if v := get(CtxAllowedOrigins); v != nil {
		switch o := v.(type) {
		case string:
			for _, s := range strings.Split(o, ",") {
				if s = strings.TrimSpace(s); s != "" {
					p.Api.AllowedOrigins = append(p.Api.AllowedOrigins, s)
				}
			}
		case []any:
			for _, e := range o {
				p.Api.AllowedOrigins = append(p.Api.AllowedOrigins, fmt.Sprint(e))
			}
		default:
			errs = append(errs, fmt.Sprintf("%s: want a list or a comma-separated string of origins", CtxAllowedOrigins))
		}
	}
	if v := get(CtxReservedConcurrency); v != nil {
		switch fmt.Sprint(v) {
		case "true":
		case "false":
			p.WithoutReservedConcurrency = true
		default:
			errs = append(errs, fmt.Sprintf("%s: want true or false, got %v", CtxReservedConcurrency, v))
		}
	}
	str(CtxSESFromEmail, &p.Api.SESFromEmail)
	str(CtxSESVerifiedDomain, &p.Api.SESVerifiedDomain)
	if v := get(CtxAlarmThresholds); v != nil {
		// The CDK CLI passes every -c value as a string: an object given on the command line
		// arrives as its JSON text.
		if text, isText := v.(string); isText {
			var parsed map[string]any
			if err := json.Unmarshal([]byte(text), &parsed); err == nil {
				v = parsed
			}
		}
		m, ok := v.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: want an object (or its JSON text) of threshold names to numbers", CtxAlarmThresholds))
		} else {
			fields := p.Thresholds.ByName()
			for _, k := range sortedKeys(m) {
				dst, known := fields[k]
				if !known {
					errs = append(errs, fmt.Sprintf("%s.%s: unknown threshold", CtxAlarmThresholds, k))
					continue
				}
				f, err := toFloat(m[k])
				if err != nil || f <= 0 {
					errs = append(errs, fmt.Sprintf("%s.%s: want a positive number, got %v", CtxAlarmThresholds, k, m[k]))
					continue
				}
				*dst = f
			}
		}
	}
	if len(errs) > 0 {
		return Props{}, fmt.Errorf("context: %s", strings.Join(errs, "; "))
	}
	return p, nil
}

func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, fmt.Errorf("want a number, got %q", x)
		}
		return f, nil
	default:
		return 0, fmt.Errorf("want a number, got %v", v)
	}
}
