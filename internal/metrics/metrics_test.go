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
