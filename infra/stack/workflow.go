package stack

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/statemachine"
)

// CfnLintWaivedOnStateMachine is the one cfn-lint check waived on the state machine (see
// NewWorkflow).
const CfnLintWaivedOnStateMachine = "E3601"

// WorkflowProps configures the state machine.
type WorkflowProps struct {
	Functions    *Functions
	Production   bool
	LogRetention awslogs.RetentionDays
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

// NewWorkflow declares the state machine from the embedded definition (package statemachine).
// The substitutions are derived from the placeholders the definition actually uses, so the
// definition and the stack cannot drift: a placeholder without a source fails synthesis, and
// nothing unused is substituted. The state machine's role may invoke exactly the functions the
// definition names. What the functions may do with the state machine is in their specs
// (internal/deploy), rendered by Functions.Render.
func NewWorkflow(scope constructs.Construct, id string, p WorkflowProps) *Workflow {
	c := constructs.NewConstruct(scope, jsii.String(id))
	def := statemachine.Definition()
	subs, invoked, err := substitutions(def, p.Functions)
	if err != nil {
		panic(fmt.Sprintf("stack: %s: %v", statemachine.File, err))
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
		// The same bytes the local engine runs, inline in the template; CloudFormation applies
		// the substitutions.
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(string(def))),
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
	// cfn-lint 1.51.0's schema of a Succeed state allows only Comment, Output and Type, but the
	// Amazon States Language gives a JSONPath Succeed state InputPath and OutputPath (CDK's
	// Succeed construct renders them too), and the business endings select their verdict with
	// OutputPath. The check is waived for this resource only, and only E3601; the definition
	// is validated by statemachine.Check and by the local engine's validator instead.
	sm.Node().DefaultChild().(awscdk.CfnResource).AddMetadata(jsii.String("cfn-lint"), map[string]any{
		"config": map[string]any{"ignore_checks": []string{CfnLintWaivedOnStateMachine}},
	})
	return &Workflow{Construct: c, StateMachine: sm, LogGroup: logs, Substitutions: keys}
}

// substitutions resolves every placeholder of the definition to its step function's ARN or
// its service integration's ARN in the stack's partition; a placeholder that names neither
// (statemachine.Steps, statemachine.Integrations) or a step this stack does not declare fails.
// It also returns the functions the definition invokes.
func substitutions(definition []byte, fs *Functions) (map[string]*string, []string, error) {
	if err := statemachine.Check(definition); err != nil {
		return nil, nil, err
	}
	used := statemachine.Placeholders(definition)
	subs := map[string]*string{}
	for _, i := range statemachine.Integrations {
		if slices.Contains(used, i.Placeholder) {
			subs[i.Placeholder] = jsii.String(i.ARN(*awscdk.Aws_PARTITION()))
		}
	}
	var invoked, undeclared []string
	for _, step := range statemachine.Steps {
		if !slices.Contains(used, step.Placeholder) {
			continue
		}
		if _, declared := fs.ByName[step.Name]; !declared {
			undeclared = append(undeclared, step.Name)
			continue
		}
		subs[step.Placeholder] = fs.Get(step.Name).Function.FunctionArn()
		invoked = append(invoked, step.Name)
	}
	if len(undeclared) > 0 {
		return nil, nil, fmt.Errorf("step functions not declared: %s", strings.Join(undeclared, ", "))
	}
	return subs, invoked, nil
}
