package stack

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// StepFunctions are the functions the state machine may invoke; a `${…FunctionArn}`
// placeholder naming any other function is refused.
var StepFunctions = []string{"claim", "authorize", "confirm", "capture", "compensate", "reconcile"}

// placeholderPattern matches CloudFormation definition substitutions as Step Functions applies
// them: ${Name}.
var placeholderPattern = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// Placeholders returns the distinct `${…}` names a definition uses, sorted.
func Placeholders(definition string) []string {
	seen := map[string]bool{}
	for _, m := range placeholderPattern.FindAllStringSubmatch(definition, -1) {
		seen[m[1]] = true
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// FunctionForPlaceholder maps a placeholder such as "ClaimFunctionArn" to the function name
// "claim"; ok is false for placeholders of any other shape.
func FunctionForPlaceholder(placeholder string) (name string, ok bool) {
	base, found := strings.CutSuffix(placeholder, "FunctionArn")
	if !found || base == "" {
		return "", false
	}
	return strings.ToLower(base), true
}

// WorkflowProps configures the state machine.
type WorkflowProps struct {
	// DefinitionPath is the ASL file (statemachine/reservation.asl.json).
	DefinitionPath string
	Functions      *Functions
	Settings       Settings
	Production     bool
	LogRetention   awslogs.RetentionDays
	// Starters may start executions and read them (the api).
	Starters []string
	// TaskResponders may complete a waiting task with SendTaskSuccess/Failure/Heartbeat.
	TaskResponders []string
	// Observers may read executions and nothing more (the sweeper checks whether a hold's
	// execution is still running before releasing it).
	Observers []string
}

// Workflow is the reservation saga's Standard state machine.
type Workflow struct {
	constructs.Construct
	StateMachine awsstepfunctions.StateMachine
	LogGroup     awslogs.LogGroup
	// Substitutions are the DefinitionSubstitutions keys, sorted; each is a placeholder the
	// definition uses.
	Substitutions []string
}

// NewWorkflow declares the state machine from the ASL file. The substitutions are derived from
// the placeholders the file actually uses, so the file and the stack cannot drift: a
// placeholder without a source fails synthesis, and nothing unused is substituted. The state
// machine's role may invoke exactly the functions the definition names.
func NewWorkflow(scope constructs.Construct, id string, p WorkflowProps) *Workflow {
	c := constructs.NewConstruct(scope, jsii.String(id))
	raw, err := os.ReadFile(p.DefinitionPath)
	if err != nil {
		panic(fmt.Sprintf("stack: read state machine definition: %v", err))
	}
	subs, invoked, err := substitutions(string(raw), p.Functions, p.Settings)
	if err != nil {
		panic(fmt.Sprintf("stack: %s: %v", p.DefinitionPath, err))
	}

	removal := awscdk.RemovalPolicy_DESTROY
	if p.Production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	// Step Functions writes through CloudWatch Logs vended delivery; a /aws/vendedlogs/ name
	// keeps it from growing the account's log resource policy with every state machine.
	logs := awslogs.NewLogGroup(c, jsii.String("Logs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String(fmt.Sprintf("/aws/vendedlogs/states/%s-reservation", *awscdk.Stack_Of(c).StackName())),
		Retention:     p.LogRetention,
		RemovalPolicy: removal,
	})
	role := awsiam.NewRole(c, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil),
		Description: jsii.String("seatsaga reservation state machine"),
	})
	// Invocation of the unqualified ARNs only: the definition never names a version or
	// alias, so no `:*` qualifier wildcard is granted.
	var arns []*string
	for _, name := range invoked {
		arns = append(arns, p.Functions.Get(name).Function.FunctionArn())
	}
	if len(arns) > 0 {
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: &arns,
		}))
	}

	subMap := map[string]*string{}
	var keys []string
	for k, v := range subs {
		subMap[k] = v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sm := awsstepfunctions.NewStateMachine(c, jsii.String("StateMachine"), &awsstepfunctions.StateMachineProps{
		// FromFile keeps the ASL file the single source the local engine also runs; CDK
		// uploads it as an S3 asset and CloudFormation applies the substitutions.
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromFile(jsii.String(p.DefinitionPath), nil),
		DefinitionSubstitutions: &subMap,
		StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
		Role:                    role,
		TracingEnabled:          jsii.Bool(true),
		Logs: &awsstepfunctions.LogOptions{
			Destination: logs,
			Level:       awsstepfunctions.LogLevel_ALL,
			// Execution data can carry payment details and client secrets; logs record
			// the transitions only.
			IncludeExecutionData: jsii.Bool(false),
		},
		RemovalPolicy: removal,
	})

	for _, name := range p.Starters {
		f := p.Functions.Get(name)
		sm.GrantStartExecution(f.Role)
		sm.GrantExecution(f.Role, jsii.String("states:DescribeExecution"))
		f.Function.AddEnvironment(jsii.String(EnvStateMachineArn), sm.StateMachineArn(), nil)
	}
	for _, name := range p.TaskResponders {
		f := p.Functions.Get(name)
		sm.GrantTaskResponse(f.Role)
		f.Function.AddEnvironment(jsii.String(EnvStateMachineArn), sm.StateMachineArn(), nil)
	}
	for _, name := range p.Observers {
		f := p.Functions.Get(name)
		sm.GrantExecution(f.Role, jsii.String("states:DescribeExecution"))
		f.Function.AddEnvironment(jsii.String(EnvStateMachineArn), sm.StateMachineArn(), nil)
	}
	return &Workflow{Construct: c, StateMachine: sm, LogGroup: logs, Substitutions: keys}
}

// substitutions resolves every placeholder of the definition: `<Step>FunctionArn` to a step
// function's ARN, and the settings the saga may need as literals. It also returns the functions
// the definition invokes.
func substitutions(definition string, fs *Functions, s Settings) (map[string]*string, []string, error) {
	allowed := map[string]bool{}
	for _, n := range StepFunctions {
		allowed[n] = true
	}
	settings := map[string]string{
		"Stage":             s.Stage,
		"LateSuccessPolicy": s.LateSuccessPolicy,
		"HoldSeconds":       strconv.Itoa(s.HoldSeconds),
	}
	subs := map[string]*string{}
	var invoked, unknown []string
	for _, ph := range Placeholders(definition) {
		if name, ok := FunctionForPlaceholder(ph); ok {
			if !allowed[name] {
				unknown = append(unknown, ph+" (not a saga step function)")
				continue
			}
			if _, declared := fs.ByName[name]; !declared {
				unknown = append(unknown, ph+" (function not declared)")
				continue
			}
			subs[ph] = fs.Get(name).Function.FunctionArn()
			invoked = append(invoked, name)
			continue
		}
		if v, ok := settings[ph]; ok {
			subs[ph] = jsii.String(v)
			continue
		}
		unknown = append(unknown, ph)
	}
	if len(unknown) > 0 {
		return nil, nil, fmt.Errorf("placeholders without a substitution: %s", strings.Join(unknown, ", "))
	}
	return subs, invoked, nil
}
