package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/seatsaga/seatsaga/infra/build"
)

// These tests synthesize the stack through the CDK's Node.js kernel. Go's test cache cannot
// see the files Node reads (the assets, cdk.json), so run them with -count=1.
// The kernel starts while the CDK packages initialize, before TestMain: silence Node 20's
// end-of-life banner with JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 in the environment
// (the Makefile exports it).

// synth is one synthesized stack and its parsed template, shared by the tests of a binary:
// a synthesis with cdk-nag takes seconds.
type synth struct {
	stack    *Seatsaga
	template assertions.Template
	// resources is the template's Resources section as plain Go values.
	resources map[string]map[string]any
}

var (
	shared    *synth
	sharedErr error
	// tmpDirs are the synthesis directories TestMain removes at the end.
	tmpDirs []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	for _, dir := range tmpDirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// synthesized returns the shared stack, synthesizing it on first use.
func synthesized(t *testing.T) *synth {
	t.Helper()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = synthesize(DefaultProps(), true)
	}
	if sharedErr != nil {
		t.Fatalf("synthesize: %v", sharedErr)
	}
	return shared
}

// synthesize builds a stack from props with placeholder assets (template tests check the
// stack's shape, not the binaries; infra/build's own tests check those).
func synthesize(p Props, nag bool) (s *synth, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic during synthesis: %v\n%s", r, debug.Stack())
		}
	}()
	root, err := build.ModuleRoot(".")
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "seatsaga-infra-test-")
	if err != nil {
		return nil, err
	}
	tmpDirs = append(tmpDirs, tmp)
	for _, name := range build.Functions {
		dir := build.AssetDir(tmp, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		body := "#!/bin/sh\n# placeholder asset for template tests of " + name + "\n"
		if err := os.WriteFile(filepath.Join(dir, "bootstrap"), []byte(body), 0o755); err != nil {
			return nil, err
		}
	}
	s = &synth{}
	p.AssetDir = tmp

	ctx, err := cdkJSONContext(filepath.Join(root, "cdk.json"))
	if err != nil {
		return nil, err
	}
	// Path metadata lets the tests find a resource by its construct path.
	ctx["aws:cdk:enable-path-metadata"] = true
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(filepath.Join(tmp, "cdk.out"))})
	s.stack = New(app, "Seatsaga-"+p.Stage, nil, p)
	if nag {
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	}
	s.template = assertions.Template_FromStack(s.stack.Stack, nil)
	raw, err := json.Marshal(s.template.ToJSON())
	if err != nil {
		return nil, err
	}
	var doc struct {
		Resources map[string]map[string]any
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	s.resources = doc.Resources
	return s, nil
}

// cdkJSONContext reads cdk.json's context so that tests synthesize with the same feature flags
// and settings as `cdk synth`.
func cdkJSONContext(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg.Context, nil
}

// byPath returns the logical id and resource whose construct path is the stack's name
// followed by path, e.g. "Functions/Api/Resource".
// id is the logical id of the resource at path.
func (s *synth) id(t *testing.T, path string) string {
	t.Helper()
	id, _ := s.byPath(t, path)
	return id
}

func (s *synth) byPath(t *testing.T, path string) (string, map[string]any) {
	t.Helper()
	want := *s.stack.StackName() + "/" + path
	for id, r := range s.resources {
		md, _ := r["Metadata"].(map[string]any)
		if md["aws:cdk:path"] == want {
			return id, r
		}
	}
	t.Fatalf("no resource at %s", want)
	return "", nil
}

// ofType returns the resources of one CloudFormation type by logical id.
func (s *synth) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.resources {
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

// props returns a resource's Properties.
func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// asJSON renders any template fragment for substring checks and messages.
func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// mustNotPanic runs an assertions call, turning its panic into a test failure.
func mustNotPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if len(msg) > 4000 {
				msg = msg[:4000] + "..."
			}
			t.Errorf("%s: %s", what, strings.TrimSpace(msg))
		}
	}()
	f()
}
