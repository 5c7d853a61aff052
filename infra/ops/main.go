// Command ops runs a sale on a deployed seatsaga stage: it loads an event's seats into the
// stage's tables and smoke-tests the stage by buying one seat end to end.
//
//	go run ./infra/ops seats load --file seats.json [--stage dev] [--table-prefix P] [--dry-run]
//	go run ./infra/ops smoke [--stage dev] [--email E] [--event ID --seat ID]
//
// It uses the AWS credentials and Region of the environment, as the AWS CLI does. Every
// service endpoint can be overridden (flags, or the SDK's AWS_ENDPOINT_URL_<SERVICE>
// variables), which is how its tests run the same code against the local stack.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/seatsaga/seatsaga/internal/tables"
)

const usage = `usage:
  go run ./infra/ops seats load --file seats.json [flags]   load an event's seats (idempotent)
  go run ./infra/ops smoke [flags]                           buy one seat end to end with a test card
  go run ./infra/ops <command> -h                            the command's flags`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "ops:", err)
		os.Exit(1)
	}
}

// run dispatches one command line; tests call it as the shell would.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch {
	case len(args) >= 2 && args[0] == "seats" && args[1] == "load":
		return seatsLoad(ctx, args[2:], stdout, stderr)
	case len(args) >= 1 && args[0] == "smoke":
		return smokeTest(ctx, args[1:], stdout, stderr)
	case len(args) >= 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help"):
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", strings.Join(args, " "), usage)
}

// awsFlags are the flags every command has: which stack, and where the two services every
// command calls answer (CloudFormation for the stack's outputs, DynamoDB for the Seats table).
// A command that calls another service registers that endpoint's flag itself.
type awsFlags struct {
	stage, stack, region     string
	dynamodb, cloudformation string
}

func (f *awsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.stage, "stage", "dev", "the stage (cdk deploy -c stage=<stage>); its stack is Seatsaga-<stage>")
	fs.StringVar(&f.stack, "stack", "", "the CloudFormation stack name (default Seatsaga-<stage>)")
	fs.StringVar(&f.region, "region", "", "AWS Region (default: the environment's, as the AWS CLI finds it)")
	fs.StringVar(&f.dynamodb, "dynamodb-endpoint", "", "DynamoDB endpoint override")
	fs.StringVar(&f.cloudformation, "cloudformation-endpoint", "", "CloudFormation endpoint override")
}

func (f *awsFlags) stackName() string {
	if f.stack != "" {
		return f.stack
	}
	return "Seatsaga-" + f.stage
}

// config loads the environment's AWS configuration in the chosen Region.
func (f *awsFlags) config(ctx context.Context) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if f.region != "" {
		opts = append(opts, config.WithRegion(f.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS Region: pass --region or set AWS_REGION")
	}
	return cfg, nil
}

func endpoint(override string) *string {
	if override == "" {
		return nil
	}
	return aws.String(override)
}

func (f *awsFlags) dynamoDB(cfg aws.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = endpoint(f.dynamodb) })
}

func (f *awsFlags) cloudFormation(cfg aws.Config) *cloudformation.Client {
	return cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = endpoint(f.cloudformation) })
}

// Output keys of the stack (infra/stack/stack.go) the commands read.
const (
	outApiURL           = "ApiUrl"
	outUserPoolID       = "UserPoolId"
	outUserPoolClientID = "UserPoolClientId"
	outStripeSecretARN  = "StripeSecretKeyArn"
	outStateMachineARN  = "StateMachineArn"
	// outSeatsTable is read when the stack has it; without it the table is named from the
	// stack name, as infra/stack/data.go names it.
	outSeatsTable = "SeatsTableName"
)

// deployedStack is a stack's name and outputs.
type deployedStack struct {
	Name    string
	Outputs map[string]string
}

// describeStack reads a stack's outputs.
func describeStack(ctx context.Context, cf *cloudformation.Client, name, region string) (deployedStack, error) {
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationError" && strings.Contains(apiErr.ErrorMessage(), "does not exist") {
		return deployedStack{}, fmt.Errorf("no stack %s in %s: deploy it (infra/README.md) or name it with --stage or --stack", name, region)
	}
	if err != nil {
		return deployedStack{}, fmt.Errorf("describe stack %s: %w", name, err)
	}
	if len(out.Stacks) == 0 {
		return deployedStack{}, fmt.Errorf("no stack %s in %s", name, region)
	}
	s := out.Stacks[0]
	switch s.StackStatus {
	case cfntypes.StackStatusCreateInProgress, cfntypes.StackStatusRollbackComplete, cfntypes.StackStatusDeleteInProgress, cfntypes.StackStatusDeleteComplete:
		return deployedStack{}, fmt.Errorf("stack %s is %s: nothing to run a sale on", name, s.StackStatus)
	}
	d := deployedStack{Name: aws.ToString(s.StackName), Outputs: map[string]string{}}
	for _, o := range s.Outputs {
		d.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return d, nil
}

// seatsTable is the deployed Seats table: under the given prefix, else the stack's output,
// else named from the stack as infra/stack/data.go names every table ("<stack>-<table>").
func seatsTable(prefix string, st deployedStack) string {
	if prefix != "" {
		return tables.Names{Prefix: prefix}.Of(tables.SeatsTable)
	}
	if name := st.Outputs[outSeatsTable]; name != "" {
		return name
	}
	return tables.Names{Prefix: st.Name + "-"}.Of(tables.SeatsTable)
}
