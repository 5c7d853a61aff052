package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/seatsaga/seatsaga/internal/tables"
	"github.com/seatsaga/seatsaga/internal/twin/dynamodblocal"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
	"github.com/seatsaga/seatsaga/internal/twin/stripesim"
)

func runInspect(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	statePath := fs.String("state", defaultStackFile, "the stack file `up` wrote")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: go run ./infra/local inspect [-state file] <reservationId>")
	}
	raw, err := os.ReadFile(*statePath)
	if err != nil {
		return fmt.Errorf("read %s (is `go run ./infra/local up` running?): %w", *statePath, err)
	}
	var s stackFile
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("read %s: %w", *statePath, err)
	}
	ddb, err := dynamodblocal.NewClient(ctx, s.Endpoints.DynamoDB)
	if err != nil {
		return err
	}
	in := &stack.Inspector{
		SFN: sfn.New(sfn.Options{Region: stack.Region, BaseEndpoint: aws.String(s.Endpoints.StepFunctions),
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}, nil
			})}),
		DynamoDB:        ddb,
		Names:           tables.Names{Prefix: s.TablePrefix},
		StateMachineARN: s.StateMachineARN,
	}
	if s.Admin != "" {
		in.Ledger = func(ctx context.Context) (stripesim.Ledger, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Admin+"/ledger", nil)
			if err != nil {
				return stripesim.Ledger{}, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return stripesim.Ledger{}, err
			}
			defer resp.Body.Close()
			var l stripesim.Ledger
			return l, json.NewDecoder(resp.Body).Decode(&l)
		}
	}
	return in.Inspect(ctx, os.Stdout, fs.Arg(0))
}
