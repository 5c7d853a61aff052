// Command cdk is seatsaga's CDK app: `cdk synth` and `cdk deploy` run it through cdk.json.
// It builds every Lambda's bootstrap from lambdas/<name> first, so the assets CDK hashes are
// always the current source, then declares the stack with cdk-nag's AwsSolutions checks as an
// aspect: an unsuppressed finding fails synthesis.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/seatsaga/seatsaga/infra/build"
	"github.com/seatsaga/seatsaga/infra/stack"
	"github.com/seatsaga/seatsaga/internal/deploy"
)

// ctxAssetDir, when set, names a directory of prebuilt <function>/bootstrap assets and skips
// the build.
const ctxAssetDir = "assetDir"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "seatsaga infra:", err)
		os.Exit(1)
	}
}

func run() error {
	defer jsii.Close()
	root, err := build.ModuleRoot(".")
	if err != nil {
		return err
	}
	app := awscdk.NewApp(nil)
	get := func(key string) any { return app.Node().TryGetContext(jsii.String(key)) }
	props, err := stack.PropsFromContext(get)
	if err != nil {
		return err
	}
	if dir, _ := get(ctxAssetDir).(string); dir != "" {
		props.AssetDir = dir
		for _, path := range stack.AssetPaths(dir, deploy.Functions()) {
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("prebuilt assets: %w", err)
			}
		}
	} else {
		props.AssetDir = filepath.Join(root, "bin", "lambda")
		if err := build.Lambdas(context.Background(), build.Options{ModuleRoot: root, OutDir: props.AssetDir}); err != nil {
			return err
		}
	}
	if err := props.Validate(); err != nil {
		return err
	}

	stack.New(app, "Seatsaga-"+props.Stage, &awscdk.StackProps{
		Description: jsii.String("seatsaga: seat reservations and payments for flash sales (" + props.Stage + ")"),
	}, props)
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	app.Synth(nil)
	return nil
}
