package app_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/modroot"
)

// The repository has three rooms: the product that ships to AWS (lambdas/ and the packages
// directly under internal/), the local twin of AWS and Stripe (internal/twin/) and the sale
// tooling (internal/sale/). Nothing that ships may depend on the other two: a Lambda binary
// that links the twin would carry test harnesses (and their Java and Node launchers) to AWS.
const (
	module = "github.com/seatsaga/seatsaga/"
	twin   = module + "internal/twin"
	sale   = module + "internal/sale"
)

// goList runs `go list` with args at the module root and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	root, err := modroot.FromWorkingDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// productPackages lists what ships: lambdas/..., the CDK app that deploys them (infra/cdk,
// infra/stack, infra/build) and every internal package outside the twin and the sale tooling.
func productPackages(t *testing.T) []string {
	var out []string
	for _, p := range goList(t, "./lambdas/...", "./infra/cdk/...", "./infra/stack/...", "./infra/build/...", "./internal/...") {
		if !inRoom(p, twin) && !inRoom(p, sale) {
			out = append(out, p)
		}
	}
	return out
}

func inRoom(pkg, room string) bool { return pkg == room || strings.HasPrefix(pkg, room+"/") }

// violations lists "pkg -> dep" for every dependency of pkgs in the twin or the sale tooling.
func violations(t *testing.T, pkgs ...string) []string {
	var out []string
	for _, p := range pkgs {
		for _, dep := range goList(t, "-deps", p) {
			if inRoom(dep, twin) || inRoom(dep, sale) {
				out = append(out, p+" -> "+dep)
			}
		}
	}
	return out
}

func TestNothingThatShipsImportsTheTwinOrTheSaleTooling(t *testing.T) {
	pkgs := productPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("only %d product packages found: %v", len(pkgs), pkgs)
	}
	for _, v := range violations(t, pkgs...) {
		t.Error(v)
	}
}

// The control: the same check flags a package known to use the twin, so a silent pass above
// means the rule holds, not that the check sees nothing.
func TestTheImportRuleFlagsAPackageThatUsesTheTwin(t *testing.T) {
	// go list -deps names the package itself: a real finding is another twin package.
	found := false
	for _, v := range violations(t, module+"internal/twin/e2e") {
		found = found || !strings.HasSuffix(v, " -> "+module+"internal/twin/e2e")
	}
	if !found {
		t.Fatal("the end-to-end suite imports the twin, yet the check reports nothing")
	}
}
