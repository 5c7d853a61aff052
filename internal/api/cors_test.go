package api

import (
	"net/http"
	"testing"
)

// A page of an allowed origin can read every answer, errors included; another origin's page
// gets nothing that would let its browser hand it the body.
func TestAnswersNameTheCallersOriginOnlyWhenItIsAllowed(t *testing.T) {
	r := newRig(t)
	r.h.d.AllowedOrigins = []string{"https://tickets.example"}
	for _, tc := range []struct {
		origin string
		want   string
	}{
		{"https://tickets.example", "https://tickets.example"},
		{"https://evil.example", ""},
		{"", ""},
	} {
		req := idReq(http.MethodGet, "alice", "r_missing")
		req.Headers = map[string]string{}
		if tc.origin != "" {
			req.Headers["origin"] = tc.origin
		}
		resp := r.do(t, req)
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d, want 404", resp.StatusCode)
		}
		if got := resp.Headers["Access-Control-Allow-Origin"]; got != tc.want {
			t.Errorf("origin %q: Access-Control-Allow-Origin %q, want %q", tc.origin, got, tc.want)
		}
		if tc.want != "" && resp.Headers["Vary"] != "Origin" {
			t.Errorf("origin %q: an answer that depends on the origin must say Vary: Origin", tc.origin)
		}
	}
}

// With no origins configured (the default), no answer carries CORS headers at all.
func TestAnswersCarryNoCORSWithoutAllowedOrigins(t *testing.T) {
	r := newRig(t)
	req := idReq(http.MethodGet, "alice", "r_missing")
	req.Headers = map[string]string{"Origin": "https://tickets.example"}
	if got := r.do(t, req).Headers["Access-Control-Allow-Origin"]; got != "" {
		t.Fatalf("Access-Control-Allow-Origin %q without configured origins", got)
	}
}
