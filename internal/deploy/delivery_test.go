package deploy

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultDeliveryIsDeployable(t *testing.T) {
	if err := DefaultDelivery().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDeliveryRefusesWhatAWSRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Delivery)
		want   string
	}{
		{"no batch", func(d *Delivery) { d.RelayBatchSize = 0 }, "relay batch size"},
		{"batch over the stream maximum", func(d *Delivery) { d.RelayBatchSize = 10001 }, "relay batch size"},
		{"infinite relay retries", func(d *Delivery) { d.RelayRetryAttempts = -1 }, "relay retry attempts"},
		{"record age under a minute", func(d *Delivery) { d.RelayMaxRecordAge = 30 * time.Second }, "relay max record age"},
		{"record age over a week", func(d *Delivery) { d.RelayMaxRecordAge = 8 * 24 * time.Hour }, "relay max record age"},
		{"fractional record age", func(d *Delivery) { d.RelayMaxRecordAge = 90*time.Second + time.Millisecond }, "whole seconds"},
		{"three async retries", func(d *Delivery) { d.ConsumerRetryAttempts = 3 }, "consumer retry attempts"},
		{"event age over six hours", func(d *Delivery) { d.ConsumerMaxEventAge = 7 * time.Hour }, "consumer max event age"},
		{"rule retries over 185", func(d *Delivery) { d.ConsumerRuleRetryAttempts = 186 }, "consumer rule retry attempts"},
		{"rule event age over a day", func(d *Delivery) { d.ConsumerRuleMaxEventAge = 25 * time.Hour }, "consumer rule max event age"},
		{"retention over 14 days", func(d *Delivery) { d.DLQRetention = 15 * 24 * time.Hour }, "dead-letter retention"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DefaultDelivery()
			tc.change(&d)
			err := d.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
