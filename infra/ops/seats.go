package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/seatsaga/seatsaga/infra/ops/catalog"
)

// seatsLoad is `seats load`: check the file, find the Seats table, create the seats it lacks.
func seatsLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, af := newFlagSet("seats load", stderr)
	file := fs.String("file", "", "the seats file (JSON; infra/README.md shows the format)")
	prefix := fs.String("table-prefix", "", "table name prefix, e.g. Seatsaga-dev- (default: found from the stack)")
	dryRun := fs.Bool("dry-run", false, "check the file and show what a load would do, writing nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *file == "" {
		return fmt.Errorf("seats load: want --file seats.json and no other arguments")
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return fmt.Errorf("seats load: %w", err)
	}
	// The whole file is checked before anything is looked up or written.
	f, err := catalog.Parse(*file, data)
	if err != nil {
		return err
	}
	cfg, err := af.config(ctx)
	if err != nil {
		return err
	}
	st, err := af.describe(ctx, cfg, *prefix == "")
	if err != nil {
		return err
	}
	loader := &catalog.Loader{DB: af.dynamoDB(cfg), Table: seatsTable(*prefix, st)}
	plan, err := loader.Plan(ctx, f)
	if err != nil {
		return fmt.Errorf("seats load: %w", err)
	}
	printPlan(stdout, *file, f, loader.Table, plan)
	if *dryRun {
		fmt.Fprintln(stdout, "dry run: nothing written")
		return nil
	}
	res, err := loader.Apply(ctx, f, plan)
	if err != nil {
		return fmt.Errorf("seats load: %w", err)
	}
	fmt.Fprintf(stdout, "created %d seats; %d were already there\n", res.Created, len(f.Seats)-res.Created)
	return nil
}

// newFlagSet starts the flags of the command name: the awsFlags every command has, and
// usage and parse errors written to stderr.
func newFlagSet(name string, stderr io.Writer) (*flag.FlagSet, *awsFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	af := new(awsFlags)
	af.register(fs)
	return fs, af
}

// describe reads the chosen stack's outputs when need says the command needs them; when
// it does not, the stack is the zero deployedStack.
func (f *awsFlags) describe(ctx context.Context, cfg aws.Config, need bool) (deployedStack, error) {
	if !need {
		return deployedStack{}, nil
	}
	return describeStack(ctx, f.cloudFormation(cfg), f.stackName(), cfg.Region)
}

func printPlan(w io.Writer, name string, f catalog.File, table string, p catalog.Plan) {
	fmt.Fprintf(w, "%s: event %s, %d seats, %s\n", name, f.EventID, len(f.Seats), window(f))
	fmt.Fprintf(w, "table %s:\n", table)
	fmt.Fprintf(w, "  to create  %d\n", len(p.Create))
	fmt.Fprintf(w, "  unchanged  %d (already stored as the file says)\n", len(p.Unchanged))
	fmt.Fprintf(w, "  kept       %d (already stored otherwise; a load never changes a stored seat)\n", len(p.Kept))
	for _, k := range p.Kept {
		fmt.Fprintf(w, "    %s (%s): %v\n", k.SeatID, k.State, k.Differences)
	}
}

func window(f catalog.File) string {
	const layout = time.RFC3339
	switch {
	case f.OpensAt.IsZero() && f.ClosesAt.IsZero():
		return "on sale at any time (no opensAt or closesAt)"
	case f.ClosesAt.IsZero():
		return "on sale from " + f.OpensAt.UTC().Format(layout)
	case f.OpensAt.IsZero():
		return "on sale until " + f.ClosesAt.UTC().Format(layout)
	}
	return "on sale from " + f.OpensAt.UTC().Format(layout) + " until " + f.ClosesAt.UTC().Format(layout)
}
