package build

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"github.com/seatsaga/seatsaga/internal/app"
	"github.com/seatsaga/seatsaga/internal/modroot"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func testdataPackages(name string) string {
	return filepath.Join("infra", "build", "testdata", name)
}

func buildInto(t *testing.T, outDir string) {
	t.Helper()
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	err = Lambdas(context.Background(), Options{
		ModuleRoot: root,
		OutDir:     outDir,
		Names:      []string{"hello", "goodbye"},
		PackageDir: testdataPackages,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestLambdasBuildsReproducibleLinuxArm64Bootstraps(t *testing.T) {
	first, second := t.TempDir(), filepath.Join(t.TempDir(), "nested", "out")
	buildInto(t, first)
	buildInto(t, second)

	for _, name := range []string{"hello", "goodbye"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(AssetDir(first, name), "bootstrap")
			f, err := elf.Open(path)
			if err != nil {
				t.Fatalf("bootstrap is not an ELF executable: %v", err)
			}
			defer f.Close()
			if f.Machine != elf.EM_AARCH64 {
				t.Errorf("machine = %v, want EM_AARCH64", f.Machine)
			}
			if f.Section(".symtab") != nil {
				t.Error("symbol table present; -s was not applied")
			}
			if info, err := os.Stat(path); err != nil || info.Mode()&0o111 == 0 {
				t.Errorf("bootstrap is not executable: %v %v", info, err)
			}
			entries, err := os.ReadDir(AssetDir(first, name))
			if err != nil || len(entries) != 1 {
				t.Errorf("asset dir must hold only bootstrap, got %v (%v)", entries, err)
			}
			if sum(t, path) != sum(t, filepath.Join(AssetDir(second, name), "bootstrap")) {
				t.Error("two builds of the same source differ; the build is not reproducible")
			}
		})
	}
	if leftovers, _ := filepath.Glob(filepath.Join(first, ".staging-*")); len(leftovers) > 0 {
		t.Errorf("staging directories left behind: %v", leftovers)
	}
}

func TestLambdasRefusesWhenEntryPointsAreMissing(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	err = Lambdas(context.Background(), Options{
		ModuleRoot: root,
		OutDir:     out,
		Names:      []string{"hello", "nosuch", "alsomissing"},
		PackageDir: testdataPackages,
	})
	var missing *MissingError
	if !errors.As(err, &missing) {
		t.Fatalf("err = %v, want *MissingError", err)
	}
	if !slices.Equal(missing.Names, []string{"nosuch", "alsomissing"}) {
		t.Errorf("missing = %v", missing.Names)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("nothing may be built when an entry point is missing, found %v", entries)
	}
}

func TestFlagsAreTheReproducibleLambdaFlags(t *testing.T) {
	flags := Flags()
	for _, want := range []string{"lambda.norpc", "-trimpath", "-ldflags=-s -w -buildid="} {
		if !slices.Contains(flags, want) {
			t.Errorf("flags %v lack %q", flags, want)
		}
	}
	env := Env("")
	for _, want := range []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %v lacks %q", env, want)
		}
	}
	// The boot test builds for the host; the deployed default stays arm64.
	if host := Env("amd64"); !slices.Contains(host, "GOARCH=amd64") || slices.Contains(host, "GOARCH=arm64") {
		t.Errorf("a host build's env %v is not for amd64", host)
	}
}

func TestFunctionsAreTheTwelveLambdas(t *testing.T) {
	if len(Functions) != 12 {
		t.Fatalf("Functions = %v, want 12 names", Functions)
	}
	seen := map[string]bool{}
	for _, n := range Functions {
		if seen[n] {
			t.Errorf("duplicate function %q", n)
		}
		seen[n] = true
	}
}

// The functions the CDK builds, the entry points under lambdas/ and the functions the app
// builds are one list: a function added to one and not the others would deploy without code or
// ship code nothing deploys.
func TestTheBuildTheLambdasAndTheAppNameTheSameFunctions(t *testing.T) {
	root, err := modroot.FromWorkingDir()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "lambdas"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	built, fromApp := slices.Sorted(slices.Values(Functions)), slices.Sorted(slices.Values(app.Functions()))
	slices.Sort(dirs)
	if !slices.Equal(built, dirs) || !slices.Equal(built, fromApp) {
		t.Fatalf("build %v\nlambdas/ %v\napp %v\nwant one list", built, dirs, fromApp)
	}
}
