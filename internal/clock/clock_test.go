package clock

import (
	"context"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeAdvanceFiresInOrder(t *testing.T) {
	f := NewFake(epoch)
	var got []string
	f.AfterFunc(3*time.Second, func() { got = append(got, "3s") })
	f.AfterFunc(1*time.Second, func() {
		got = append(got, "1s")
		// A call scheduled by a due call runs in the same Advance when it falls due.
		f.AfterFunc(1*time.Second, func() { got = append(got, "2s") })
	})
	stopped := f.AfterFunc(2500*time.Millisecond, func() { got = append(got, "stopped") })
	if !stopped.Stop() {
		t.Fatal("Stop on pending timer returned false")
	}
	f.AfterFunc(10*time.Second, func() { got = append(got, "10s") })
	f.Advance(5 * time.Second)
	want := []string{"1s", "2s", "3s"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if !f.Now().Equal(epoch.Add(5 * time.Second)) {
		t.Fatalf("now = %v", f.Now())
	}
	if f.Waiters() != 1 {
		t.Fatalf("waiters = %d, want 1", f.Waiters())
	}
	if !f.AdvanceToNext() || len(got) != 4 || !f.Now().Equal(epoch.Add(10*time.Second)) {
		t.Fatalf("AdvanceToNext: got %v at %v", got, f.Now())
	}
	if f.AdvanceToNext() {
		t.Fatal("AdvanceToNext with nothing pending returned true")
	}
}

func TestFakeSleepAndBlockUntil(t *testing.T) {
	f := NewFake(epoch)
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), f, time.Minute) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	cctx, ccancel := context.WithCancel(context.Background())
	go func() { done <- Sleep(cctx, f, time.Minute) }()
	f.BlockUntil(1)
	ccancel()
	if err := <-done; err == nil {
		t.Fatal("Sleep ignored cancellation")
	}
	if f.Waiters() != 0 {
		t.Fatalf("cancelled Sleep left %d timers", f.Waiters())
	}

	short, scancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer scancel()
	if err := f.BlockUntilContext(short, 5); err == nil {
		t.Fatal("BlockUntilContext returned without waiters or cancellation")
	}
}

func TestScaled(t *testing.T) {
	base := NewFake(epoch)
	s := NewScaled(base, 100)
	base.Advance(time.Second)
	if got := s.Now().Sub(epoch); got != 100*time.Second {
		t.Fatalf("scaled elapsed = %v, want 100s", got)
	}
	fired := false
	s.AfterFunc(200*time.Second, func() { fired = true })
	base.Advance(1999 * time.Millisecond)
	if fired {
		t.Fatal("fired early")
	}
	base.Advance(time.Millisecond)
	if !fired {
		t.Fatal("did not fire after 2 base seconds")
	}
}

func TestRealAfter(t *testing.T) {
	select {
	case <-After(Real{}, time.Millisecond):
	case <-time.After(5 * time.Second):
		t.Fatal("Real After did not fire")
	}
}
