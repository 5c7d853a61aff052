package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCatalogueListsEveryScenario keeps the package doc's catalogue and the tests in step: every
// scenario test is listed exactly once, and every listed test exists.
func TestCatalogueListsEveryScenario(t *testing.T) {
	fset := token.NewFileSet()
	doc, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^\s+- (Test\w+): \S`).FindAllStringSubmatch(doc.Doc.Text(), -1) {
		listed[m[1]]++
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var tests []string
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			if name := fn.Name.Name; name != "TestMain" && name != "TestCatalogueListsEveryScenario" {
				tests = append(tests, name)
			}
		}
	}
	slices.Sort(tests)
	for _, name := range tests {
		if listed[name] != 1 {
			t.Errorf("%s is listed %d times in the catalogue (doc.go), want once", name, listed[name])
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("the catalogue lists %s, which is no test", name)
	}
	if len(tests) == 0 {
		t.Fatal("no scenario tests found")
	}
}
