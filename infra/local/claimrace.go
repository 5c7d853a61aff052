package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/sale/claimrace"
	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal"
)

// runClaimRace is the foundation's stage demo: buyers race straight through the inventory's
// Claim on DynamoDB Local, then full scans audit for double bookings.
func runClaimRace(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("claimrace", flag.ContinueOnError)
	seats := fs.Int("seats", 200, "seats (N)")
	buyers := fs.Int("buyers", 2000, "concurrent buyers (M)")
	perBuyer := fs.Int("seats-per-buyer", 1, "seats each buyer claims")
	concurrency := fs.Int("concurrency", 64, "claims in flight")
	if err := fs.Parse(args); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	srv, err := dynamodblocal.Start(startCtx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	client, err := dynamodblocal.NewClient(ctx, srv.Endpoint())
	if err != nil {
		return err
	}
	names := tables.Names{Prefix: fmt.Sprintf("race%d-", time.Now().UnixNano())}
	if err := dynamodblocal.CreateTables(startCtx, client, names); err != nil {
		return err
	}
	store, err := inventory.New(inventory.Config{Client: client, Names: names, Now: time.Now})
	if err != nil {
		return err
	}
	res, err := claimrace.Run(ctx, claimrace.Config{
		DB: client, Names: names, Seats: store, Claimer: store,
		SeatCount: *seats, Buyers: *buyers, SeatsPerBuyer: *perBuyer, Concurrency: *concurrency,
	})
	if err != nil {
		return err
	}
	res.Print(os.Stdout)
	if !res.Audit.Clean() {
		return errors.New("the audit found double bookings or partial holds")
	}
	return nil
}
