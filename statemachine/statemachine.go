// Package statemachine is the reservation saga's ASL definition and what it needs to run: the
// step functions and the service integrations it invokes, and the placeholders that name them.
// The definition is embedded, so the CDK stack, the local stack and the tests all read the same
// bytes without locating a file.
package statemachine

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// File is where the definition lives in the repository, for messages.
const File = "statemachine/reservation.asl.json"

//go:embed reservation.asl.json
var definition []byte

// Definition returns the definition as written, placeholders included. It is a copy: callers
// may change it.
func Definition() []byte { return slices.Clone(definition) }

// Step is a Lambda function the definition invokes.
type Step struct {
	// Name is the function's name ("claim"), as lambdas/<name> and the stacks spell it.
	Name string
	// Placeholder is the ${…} name the definition uses for the function's ARN.
	Placeholder string
}

// Steps are the step functions in saga order. With Integrations they are the only placeholders
// the definition may use: CloudFormation (and the local stack) substitutes nothing else.
var Steps = []Step{
	{"claim", "ClaimFunctionArn"},
	{"authorize", "AuthorizeFunctionArn"},
	{"confirm", "ConfirmFunctionArn"},
	{"capture", "CaptureFunctionArn"},
	{"compensate", "CompensateFunctionArn"},
	{"reconcile", "ReconcileFunctionArn"},
}

// Integration is a Step Functions service integration a Task state names as its Resource. Its
// ARN carries the partition (arn:aws:..., arn:aws-cn:...), so the definition names it by a
// placeholder, as a whole ARN (cfn-lint validates a Resource that is not one placeholder
// against arn:aws: only), and each deployment substitutes the ARN in its own partition.
type Integration struct {
	// Name is the integration's resource after "arn:<partition>:states:::".
	Name string
	// Placeholder is the ${…} name the definition uses for the integration's ARN.
	Placeholder string
}

// ARN is the integration's ARN in partition ("aws", "aws-cn", "aws-us-gov", ...).
func (i Integration) ARN(partition string) string {
	return "arn:" + partition + ":states:::" + i.Name
}

// Integrations are the service integrations the definition uses.
var Integrations = []Integration{
	{"lambda:invoke.waitForTaskToken", "LambdaInvokeWaitForTaskTokenArn"},
}

// IntegrationFor returns the integration whose placeholder is name.
func IntegrationFor(placeholder string) (Integration, bool) {
	for _, i := range Integrations {
		if i.Placeholder == placeholder {
			return i, true
		}
	}
	return Integration{}, false
}

// StepFor returns the step whose placeholder is name.
func StepFor(placeholder string) (Step, bool) {
	for _, s := range Steps {
		if s.Placeholder == placeholder {
			return s, true
		}
	}
	return Step{}, false
}

// placeholderPattern matches ${…} as CloudFormation's DefinitionSubstitutions do. It accepts any
// name so that a misspelt one is reported rather than left in the definition.
var placeholderPattern = regexp.MustCompile(`\$\{([^}]*)\}`)

// Placeholders returns the distinct ${…} names def uses, sorted.
func Placeholders(def []byte) []string {
	seen := map[string]bool{}
	for _, m := range placeholderPattern.FindAllSubmatch(def, -1) {
		seen[string(m[1])] = true
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Check reports the placeholders of def that name neither a step nor an integration.
func Check(def []byte) error {
	var unknown []string
	for _, ph := range Placeholders(def) {
		_, step := StepFor(ph)
		_, integration := IntegrationFor(ph)
		if !step && !integration {
			unknown = append(unknown, "${"+ph+"}")
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("statemachine: unknown placeholders %s", strings.Join(unknown, ", "))
	}
	return nil
}

// Substitute returns the embedded definition with each step's placeholder replaced by
// arns[step name] and each integration's by its ARN in the partition of those ARNs.
func Substitute(arns map[string]string) ([]byte, error) {
	return SubstituteIn(definition, arns)
}

// SubstituteIn is Substitute over another definition. It fails, naming them, on placeholders
// that name no step or integration, on placeholders whose step has no ARN in arns, on keys of
// arns that are not steps (a misspelt name would otherwise go unnoticed), and, when def uses
// an integration, on step ARNs that do not agree on one partition: a state machine invokes its
// functions in its own partition, so theirs is its integrations' too.
func SubstituteIn(def []byte, arns map[string]string) ([]byte, error) {
	if err := Check(def); err != nil {
		return nil, err
	}
	var problems []string
	for name := range arns {
		if !slices.ContainsFunc(Steps, func(s Step) bool { return s.Name == name }) {
			problems = append(problems, fmt.Sprintf("%q is not a step function", name))
		}
	}
	var partition string
	for _, ph := range Placeholders(def) {
		if _, ok := IntegrationFor(ph); ok {
			p, err := partitionOf(arns)
			if err != nil {
				problems = append(problems, fmt.Sprintf("${%s}: %v", ph, err))
			}
			partition = p
			continue
		}
		s, _ := StepFor(ph)
		if arns[s.Name] == "" {
			problems = append(problems, fmt.Sprintf("no ARN for step %s (${%s})", s.Name, ph))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, fmt.Errorf("statemachine: %s", strings.Join(problems, "; "))
	}
	return placeholderPattern.ReplaceAllFunc(def, func(m []byte) []byte {
		ph := string(m[2 : len(m)-1])
		if i, ok := IntegrationFor(ph); ok {
			return []byte(i.ARN(partition))
		}
		s, _ := StepFor(ph)
		return []byte(arns[s.Name])
	}), nil
}

// partitionOf returns the one partition of the ARNs (arn:<partition>:...).
func partitionOf(arns map[string]string) (string, error) {
	seen := map[string]bool{}
	for _, arn := range arns {
		fields := strings.SplitN(arn, ":", 3)
		if len(fields) < 3 || fields[0] != "arn" || fields[1] == "" {
			return "", fmt.Errorf("%q is not an ARN", arn)
		}
		seen[fields[1]] = true
	}
	partitions := slices.Sorted(maps.Keys(seen))
	if len(partitions) != 1 {
		return "", fmt.Errorf("the step ARNs name partitions %v, want exactly one", partitions)
	}
	return partitions[0], nil
}

// StateNames returns the names of the definition's top-level states, sorted. The definition has
// no Parallel or Map states, so these are every state an execution can enter.
func StateNames() []string {
	var def struct{ States map[string]json.RawMessage }
	if err := json.Unmarshal(definition, &def); err != nil {
		// The package's tests parse the embedded file; this cannot happen in a built binary.
		panic(fmt.Sprintf("statemachine: %s: %v", File, err))
	}
	names := make([]string, 0, len(def.States))
	for name := range def.States {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
