package stripesim

import (
	"testing"
	"time"
)

func newFaultOnlySim() *Sim {
	return &Sim{faults: map[Endpoint][]*activeFault{}, latency: map[Endpoint]time.Duration{}}
}

// A window fault fails every call while it lasts, however many, and vanishes after; each call
// it fails is reported. The control endpoint, never armed, is never failed.
func TestFailUntilFailsEveryCallInItsWindowOnly(t *testing.T) {
	s := newFaultOnlySim()
	hits := 0
	s.FailUntil(EndpointCaptureIntent, time.Now().Add(time.Hour), func() { hits++ })
	for range 5 {
		if !s.takeFaults(EndpointCaptureIntent).failBefore {
			t.Fatal("a call inside the window was not failed")
		}
	}
	if hits != 5 {
		t.Fatalf("%d hits reported, want 5", hits)
	}
	if s.takeFaults(EndpointConfirmIntent).failBefore {
		t.Fatal("an endpoint outside the outage failed")
	}
	s.FailUntil(EndpointCancelIntent, time.Now().Add(-time.Second), func() { hits++ })
	if s.takeFaults(EndpointCancelIntent).failBefore || hits != 5 || len(s.faults[EndpointCancelIntent]) != 0 {
		t.Fatal("a window that has ended still failed a call or stayed armed")
	}
}

// A counted fault reports each call it hits, and only those.
func TestCountedFaultReportsEachHit(t *testing.T) {
	s := newFaultOnlySim()
	hits := 0
	s.InjectFault(EndpointConfirmIntent, Fault{Kind: FaultLoseResponse, Times: 2, OnInjected: func() { hits++ }})
	for range 4 {
		s.takeFaults(EndpointConfirmIntent)
	}
	if hits != 2 {
		t.Fatalf("%d hits reported for a fault of two calls", hits)
	}
}
