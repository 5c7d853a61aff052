// Package build compiles seatsaga's Lambda entry points into the `bootstrap` executables that
// the provided.al2023 runtime starts. The CDK app runs it before synthesis, so the assets that
// `cdk synth` hashes and `cdk deploy` uploads are always built from the current source.
//
// Builds are reproducible: the same source and toolchain give byte-identical binaries (no paths,
// no build id, no VCS stamp), so an unchanged function keeps its asset hash and is not
// redeployed.
package build

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/modroot"
)

// Functions names every Lambda seatsaga deploys (internal/deploy's specs); each is built from
// lambdas/<name>.
var Functions = deploy.Names()

// Options says what to build and where.
type Options struct {
	// ModuleRoot is the directory holding go.mod.
	ModuleRoot string
	// OutDir receives one directory per function, each holding only `bootstrap`.
	OutDir string
	// Names lists the functions to build; empty means Functions.
	Names []string
	// GoBin is the go command; empty means "go" from PATH.
	GoBin string
	// PackageDir maps a function name to its package directory relative to ModuleRoot; nil
	// means lambdas/<name>. Tests point it at small programs of their own.
	PackageDir func(name string) string
	// Arch is the linux GOARCH to build for; empty means arm64, the deployed architecture.
	// The boot test builds for the host so that it can run the binaries it deploys.
	Arch string
}

// MissingError says which Lambda entry points do not exist yet.
type MissingError struct {
	Names []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("lambda entry points missing: %s (each needs lambdas/<name>/main.go)",
		strings.Join(e.Names, ", "))
}

// Flags returns the go build arguments every bootstrap is built with: the lambda.norpc tag
// (the provided runtimes speak the Runtime API, not the Go 1.x RPC protocol), no file system
// paths, no symbol tables and an empty build id so that rebuilding changes nothing.
func Flags() []string {
	return []string{"-tags", "lambda.norpc", "-trimpath", "-buildvcs=false", "-mod=readonly",
		"-ldflags=-s -w -buildid="}
}

// Env returns the environment additions for a static linux build for arch (empty: arm64).
func Env(arch string) []string {
	if arch == "" {
		arch = "arm64"
	}
	return []string{"GOOS=linux", "GOARCH=" + arch, "CGO_ENABLED=0", "GOFLAGS="}
}

// AssetDir returns the asset directory of one function under outDir.
func AssetDir(outDir, name string) string { return filepath.Join(outDir, name) }

// Lambdas builds every requested function in one go build invocation (so shared packages are
// compiled once) and lays the results out as OutDir/<name>/bootstrap. It refuses to build
// anything when an entry point is missing, naming each one.
func Lambdas(ctx context.Context, o Options) error {
	names := o.Names
	if len(names) == 0 {
		names = Functions
	}
	pkgDir := o.PackageDir
	if pkgDir == nil {
		pkgDir = func(name string) string { return filepath.Join("lambdas", name) }
	}
	var missing, pkgs []string
	for _, n := range names {
		dir := pkgDir(n)
		if _, err := os.Stat(filepath.Join(o.ModuleRoot, dir, "main.go")); err != nil {
			missing = append(missing, n)
			continue
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(dir))
	}
	if len(missing) > 0 {
		return &MissingError{Names: missing}
	}

	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return fmt.Errorf("build lambdas: create %s: %w", o.OutDir, err)
	}
	staging, err := os.MkdirTemp(o.OutDir, ".staging-")
	if err != nil {
		return fmt.Errorf("build lambdas: staging dir: %w", err)
	}
	defer os.RemoveAll(staging)

	goBin := o.GoBin
	if goBin == "" {
		goBin = "go"
	}
	// With several packages and -o naming a directory, go build writes one executable per
	// package named after its directory; each is then moved into its own asset directory.
	args := append([]string{"build"}, Flags()...)
	args = append(args, "-o", staging+string(filepath.Separator))
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = o.ModuleRoot
	cmd.Env = append(os.Environ(), Env(o.Arch)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build lambdas: go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	for _, n := range names {
		built := filepath.Join(staging, filepath.Base(pkgDir(n)))
		dst := AssetDir(o.OutDir, n)
		if err := os.RemoveAll(dst); err != nil {
			return fmt.Errorf("build lambdas: clear %s: %w", dst, err)
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("build lambdas: create %s: %w", dst, err)
		}
		if err := os.Rename(built, filepath.Join(dst, "bootstrap")); err != nil {
			return fmt.Errorf("build lambdas: place %s: %w", n, err)
		}
	}
	return nil
}

// ModuleRoot walks up from dir to the directory that holds go.mod.
func ModuleRoot(dir string) (string, error) { return modroot.Find(dir) }
