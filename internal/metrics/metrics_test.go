package metrics

import "testing"

func TestMemoryCountsByNameAndDimensions(t *testing.T) {
	m := NewMemory()
	m.Count("ConditionalCheckFailed", 2, Dim{"op", "claim"})
	m.Count("ConditionalCheckFailed", 1, Dim{"op", "confirm"})
	m.Count("ConditionalCheckFailed", 3, Dim{"op", "claim"})
	m.Count("Throttled", 1)

	if got := m.Get("ConditionalCheckFailed", Dim{"op", "claim"}); got != 5 {
		t.Errorf("claim count = %d, want 5", got)
	}
	if got := m.Total("ConditionalCheckFailed"); got != 6 {
		t.Errorf("total = %d, want 6", got)
	}
	if got := m.Total("Throttled"); got != 1 {
		t.Errorf("throttled = %d, want 1", got)
	}
	if got := m.Total("Conditional"); got != 0 {
		t.Errorf("a name prefix must not match another name, got %d", got)
	}
}

func TestKeyIsIndependentOfDimensionOrder(t *testing.T) {
	a := Key("m", Dim{"b", "2"}, Dim{"a", "1"})
	b := Key("m", Dim{"a", "1"}, Dim{"b", "2"})
	if a != b || a != "m{a=1,b=2}" {
		t.Fatalf("keys differ or are malformed: %q %q", a, b)
	}
}

func TestMemoryGaugeKeepsTheLastReadingApartFromCounts(t *testing.T) {
	m := NewMemory()
	if _, ok := m.Last("Backlog"); ok {
		t.Fatal("a gauge never published must read as missing, not as 0")
	}
	m.Gauge("Backlog", 4, UnitCount)
	m.Gauge("Backlog", 1, UnitCount)
	m.Gauge("AgeSeconds", 300, UnitSeconds, Dim{"kind", "hold"})
	if r, ok := m.Last("Backlog"); !ok || r != (Reading{Value: 1, Unit: UnitCount}) {
		t.Errorf("Backlog = %+v %v, want the last reading 1 Count", r, ok)
	}
	if r, ok := m.Last("AgeSeconds", Dim{"kind", "hold"}); !ok || r != (Reading{Value: 300, Unit: UnitSeconds}) {
		t.Errorf("AgeSeconds = %+v %v", r, ok)
	}
	if got := m.Total("Backlog"); got != 0 {
		t.Errorf("a gauge must not be summed into the counts, got %d", got)
	}
}
