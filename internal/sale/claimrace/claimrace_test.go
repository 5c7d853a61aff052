package claimrace_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/sale/claimrace"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal/ddbtest"
)

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m)) }

func TestSmallRace(t *testing.T) {
	env := ddbtest.New(t, tables.Seats(), tables.Reservations(), tables.Outbox(), tables.Admissions())
	store, err := inventory.New(inventory.Config{Client: env.Client, Names: env.Names, Now: time.Now, Metrics: metrics.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := claimrace.Run(context.Background(), claimrace.Config{
		DB: env.Client, Names: env.Names, Seats: store, Claimer: store,
		EventID: "small", SeatCount: 20, Buyers: 100, SeatsPerBuyer: 2, Concurrency: 16, Seed: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Winners+res.Losers != 100 {
		t.Fatalf("winners %d losers %d errors %d", res.Winners, res.Losers, res.Errors)
	}
	if res.Winners < 1 || res.Winners > 10 || res.Audit.SeatsTaken != 2*res.Winners || !res.Audit.Clean() {
		t.Fatalf("winners %d, audit %+v", res.Winners, res.Audit)
	}
	if res.Audit.SeatsScanned != 20 || res.Audit.OutboxRecords != res.Winners || res.ClaimsPerSecond <= 0 {
		t.Fatalf("result %+v", res.Audit)
	}
	var out bytes.Buffer
	res.Print(&out)
	for _, want := range []string{"seats            20", "double bookings  0", "claims/second"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("printout lacks %q:\n%s", want, out.String())
		}
	}
}

func TestConfigRefusesImpossibleRaces(t *testing.T) {
	env := ddbtest.New(t, tables.Seats())
	store, err := inventory.New(inventory.Config{Client: env.Client, Names: env.Names, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := claimrace.Run(context.Background(), claimrace.Config{DB: env.Client, Names: env.Names, Seats: store, Claimer: store,
		SeatCount: 2, SeatsPerBuyer: 3}); err == nil {
		t.Fatal("3 seats per buyer from 2 seats accepted")
	}
	if _, err := claimrace.Run(context.Background(), claimrace.Config{}); err == nil {
		t.Fatal("empty config accepted")
	}
}
