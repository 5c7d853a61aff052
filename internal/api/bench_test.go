package api

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkDecodeCreateRequest measures parsing and validating a two-seat create request.
func BenchmarkDecodeCreateRequest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, e := DecodeCreateRequest(goodBody, false, 10); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkCreate measures the handler's own work for an admitted POST (fake stores and Step
// Functions, so the figure excludes network round trips): validation, id derivation, the
// replay lookup, the admission pre-check and the execution start.
func BenchmarkCreate(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		resp, err := r.h.Handle(ctx, postReq("alice", "ev1", "key-"+strconv.Itoa(i), goodBody))
		if err != nil || resp.StatusCode != 202 {
			b.Fatalf("%d %v", resp.StatusCode, err)
		}
	}
}
