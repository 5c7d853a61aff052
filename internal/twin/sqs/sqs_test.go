package sqs

import (
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
)

var t0 = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

func TestAQueueKnowsItsDepthAndOldestAgeAtAnyTime(t *testing.T) {
	c := clock.NewFake(t0)
	q := New(Options{Clock: c, Region: "us-east-1", AccountID: "000000000000"}).CreateQueue("RelayDLQ", time.Hour)
	if q.ARN() != "arn:aws:sqs:us-east-1:000000000000:RelayDLQ" {
		t.Errorf("ARN %s", q.ARN())
	}
	first := q.SendMessage(`{"n":1}`)
	c.Advance(10 * time.Minute)
	q.SendMessage(`{"n":2}`)
	for _, tc := range []struct {
		at     time.Time
		depth  int
		oldest time.Duration
	}{
		{t0.Add(-time.Second), 0, 0}, // before anything was sent
		{t0, 1, 0},                   // the first, just sent
		{t0.Add(5 * time.Minute), 1, 5 * time.Minute},   // only the first
		{t0.Add(15 * time.Minute), 2, 15 * time.Minute}, // both; the first is the oldest
		{t0.Add(65 * time.Minute), 1, 55 * time.Minute}, // the first expired after its hour
		{t0.Add(70 * time.Minute), 0, 0},                // both expired
		{t0.Add(69*time.Minute + 59*time.Second), 1, 59*time.Minute + 59*time.Second},
	} {
		if d, a := q.Depth(tc.at), q.OldestAge(tc.at); d != tc.depth || a != tc.oldest {
			t.Errorf("at +%s: depth %d oldest %s, want %d and %s", tc.at.Sub(t0), d, a, tc.depth, tc.oldest)
		}
	}
	if ms := q.Messages(); len(ms) != 2 || ms[0].MessageID != first.MessageID || !ms[0].SentAt.Equal(t0) {
		t.Errorf("messages now %+v", ms)
	}
	if !q.DeleteMessage(first.MessageID) || q.DeleteMessage(first.MessageID) {
		t.Error("a message is deleted once")
	}
	if q.Depth(c.Now()) != 1 {
		t.Errorf("depth after the delete %d", q.Depth(c.Now()))
	}
}

func TestTheServicePublishesBothMetricsOfEveryQueueEachMinute(t *testing.T) {
	c := clock.NewFake(t0)
	store := cloudwatch.NewStore()
	s := New(Options{Clock: c, Metrics: store})
	relay, consumer := s.CreateQueue("RelayDLQ", 0), s.CreateQueue("ConsumerDLQ", 0)
	if s.CreateQueue("RelayDLQ", 0) != relay || s.Queue("ConsumerDLQ") != consumer || s.Queue("nope") != nil {
		t.Fatal("queues are found by name and created once")
	}
	s.Start()
	c.Advance(90 * time.Second)
	relay.SendMessage("lost")
	c.Advance(150 * time.Second) // publications at +1, +2, +3, +4 min
	s.Stop()
	c.Advance(10 * time.Minute)

	series := func(q, name string) []cloudwatch.Datum {
		return store.Points(cloudwatch.SeriesOf(Namespace, name, map[string]string{DimensionQueue: q}), t0, t0.Add(time.Hour))
	}
	depth, age := series("RelayDLQ", MetricVisible), series("RelayDLQ", MetricOldestAge)
	if len(depth) != 4 || len(age) != 4 {
		t.Fatalf("%d depth and %d age points, want one a minute for 4 minutes and none after Stop", len(depth), len(age))
	}
	wantDepth := []float64{0, 1, 1, 1}
	wantAge := []float64{0, 30, 90, 150}
	for i := range depth {
		if at := t0.Add(time.Duration(i+1) * time.Minute); !depth[i].Time.Equal(at) || !age[i].Time.Equal(at) {
			t.Errorf("point %d at %s/%s, want %s", i, depth[i].Time, age[i].Time, at)
		}
		if depth[i].Value != wantDepth[i] || depth[i].Unit != "Count" {
			t.Errorf("depth point %d: %+v, want %v Count", i, depth[i], wantDepth[i])
		}
		if age[i].Value != wantAge[i] || age[i].Unit != "Seconds" {
			t.Errorf("age point %d: %+v, want %v Seconds", i, age[i], wantAge[i])
		}
	}
	if n := len(series("ConsumerDLQ", MetricVisible)); n != 4 {
		t.Errorf("the empty queue published %d depth points, want 4 (zeros)", n)
	}
}
