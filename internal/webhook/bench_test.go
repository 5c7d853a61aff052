package webhook

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
)

// BenchmarkProcessDuplicate measures a redelivered event: verify, retrieve, read, callback
// claim (sent by this very event), done (fakes, so network round trips are excluded).
func BenchmarkProcessDuplicate(b *testing.B) {
	r := newRig(b)
	payload, _ := json.Marshal(map[string]string{"id": "evt_1", "type": "x", "pi": "pi_1"})
	ctx := context.Background()
	if _, err := r.h.Process(ctx, payload, "ok"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := r.h.Process(ctx, payload, "ok"); err != nil || res.Action != ActionDuplicate {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkProcessNewEvent measures a new event about an already reported payment: verify,
// retrieve, read, callback claim (already sent).
func BenchmarkProcessNewEvent(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		payload, _ := json.Marshal(map[string]string{"id": "evt_" + strconv.Itoa(i), "type": "x", "pi": "pi_1"})
		if _, err := r.h.Process(ctx, payload, "ok"); err != nil {
			b.Fatal(err)
		}
	}
}
