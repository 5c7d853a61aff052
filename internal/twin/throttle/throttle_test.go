package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/throttle"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestAFullBucketAdmitsItsSizeThenRefillsAtItsRate(t *testing.T) {
	c := clock.NewFake(t0)
	b := throttle.New(c, throttle.Limit{Size: 3, RefillPerSecond: 2})
	for i := range 3 {
		if !b.Take() {
			t.Fatalf("take %d of a full bucket of 3 refused", i+1)
		}
	}
	if b.Take() {
		t.Fatal("an empty bucket admitted a fourth take")
	}
	c.Advance(499 * time.Millisecond)
	if b.Take() {
		t.Fatal("a token came back before half a second at 2/s")
	}
	c.Advance(time.Millisecond)
	if !b.Take() {
		t.Fatal("no token after half a second at 2/s")
	}
	// A long pause refills no more than the bucket holds.
	c.Advance(time.Hour)
	for i := range 3 {
		if !b.Take() {
			t.Fatalf("take %d after an hour refused", i+1)
		}
	}
	if b.Take() {
		t.Fatal("the bucket held more than its size after an hour")
	}
}

func TestWaitersAreAdmittedInTurnAsTokensComeBack(t *testing.T) {
	c := clock.NewFake(t0)
	b := throttle.New(c, throttle.Limit{Size: 1, RefillPerSecond: 1})
	ctx := context.Background()
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 2)
	for i := range 2 {
		go func() {
			if err := b.Wait(ctx); err != nil {
				t.Error(err)
			}
			done <- i
		}()
	}
	c.BlockUntil(2)
	select {
	case <-done:
		t.Fatal("a waiter went on with the bucket empty")
	default:
	}
	c.Advance(time.Second)
	<-done
	select {
	case <-done:
		t.Fatal("two waiters went on after one second at 1/s")
	case <-time.After(20 * time.Millisecond):
	}
	c.Advance(time.Second)
	<-done
}

func TestAWaitCancelledGivesItsTokenBack(t *testing.T) {
	c := clock.NewFake(t0)
	b := throttle.New(c, throttle.Limit{Size: 1, RefillPerSecond: 1})
	_ = b.Take()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.Wait(ctx) }()
	c.BlockUntil(1)
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled wait took its token")
	}
	c.Advance(time.Second)
	if !b.Take() {
		t.Fatal("the cancelled waiter's token was not given back")
	}
}

// Reserve hands out the bucket's tokens and then schedules each further taker one refill
// interval after the one before, as Wait would sleep.
func TestReserveSchedulesTakersAtTheRefillRate(t *testing.T) {
	c := clock.NewFake(t0)
	b := throttle.New(c, throttle.Limit{Size: 2, RefillPerSecond: 4})
	want := []time.Duration{0, 0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond}
	for i, w := range want {
		if got := b.Reserve(); got != w {
			t.Fatalf("taker %d waits %v, want %v", i+1, got, w)
		}
	}
	// A second refills 4: the debt of 3 is repaid and one token is left.
	c.Advance(time.Second)
	for i, w := range []time.Duration{0, 250 * time.Millisecond} {
		if got := b.Reserve(); got != w {
			t.Fatalf("after a second, taker %d waits %v, want %v", i+1, got, w)
		}
	}
	if got := throttle.New(c, throttle.Limit{Size: 0}).Reserve(); got != -1 {
		t.Fatalf("a bucket that never refills: %v, want -1", got)
	}
}
