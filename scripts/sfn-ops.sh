#!/usr/bin/env bash
# Runs each Step Functions operation the local twin added (UpdateStateMachine, versions, tags,
# ValidateStateMachineDefinition, TestState, RedriveExecution, StartSyncExecution) with the AWS
# CLI against the endpoint given, and checks each answer. It creates state machines named
# sfn-ops-* there and stops what it starts.
#
#   scripts/sfn-ops.sh http://127.0.0.1:8083
set -euo pipefail

endpoint=${1:?usage: $0 STEP_FUNCTIONS_ENDPOINT}
# The CLI sends StartSyncExecution and TestState to the endpoint's host prefixed with "sync-",
# as AWS's endpoints expect; a local endpoint has no such host.
export AWS_DISABLE_HOST_PREFIX_INJECTION=true
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-local} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-local}
export AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-us-east-1} AWS_PAGER=""
role=arn:aws:iam::123456789012:role/sfn-ops
suffix=${SFN_OPS_SUFFIX:-$$}

sfn() { aws --endpoint-url "$endpoint" --output text stepfunctions "$@"; }

# expect NAME WANT GOT: fails the script unless GOT is WANT.
expect() {
	if [[ "$3" != "$2" ]]; then
		echo "FAIL $1: got '$3', want '$2'" >&2
		exit 1
	fi
	echo "ok   $1"
}

# expect_error NAME CODE COMMAND...: fails the script unless COMMAND fails with error CODE.
expect_error() {
	local name=$1 code=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		echo "FAIL $name: succeeded, want $code" >&2
		exit 1
	fi
	if [[ "$out" != *"($code)"* ]]; then
		echo "FAIL $name: got '$out', want $code" >&2
		exit 1
	fi
	echo "ok   $name ($code)"
}

pass_def='{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"one","ResultPath":"$.v","End":true}}}'
wait_def='{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}'

# UpdateStateMachine, PublishStateMachineVersion, ListStateMachineVersions.
sm=$(sfn create-state-machine --name "sfn-ops-update-$suffix" --role-arn "$role" --definition "$pass_def" \
	--tracing-configuration enabled=true --query stateMachineArn)
rev1=$(sfn describe-state-machine --state-machine-arn "$sm" --query revisionId)
expect "describe-state-machine tracing" True "$(sfn describe-state-machine --state-machine-arn "$sm" --query tracingConfiguration.enabled)"
expect_error "update-state-machine with nothing to change" MissingRequiredParameter sfn update-state-machine --state-machine-arn "$sm"
version=$(sfn update-state-machine --state-machine-arn "$sm" --definition "${pass_def/one/two}" --publish --version-description second \
	--query stateMachineVersionArn)
expect "update-state-machine --publish" "$sm:1" "$version"
rev2=$(sfn describe-state-machine --state-machine-arn "$sm" --query revisionId)
[[ "$rev2" != "$rev1" ]] || { echo "FAIL update-state-machine: revisionId unchanged" >&2; exit 1; }
echo "ok   update-state-machine changes revisionId"
expect "describe-state-machine of the version" second "$(sfn describe-state-machine --state-machine-arn "$version" --query description)"
expect "publish-state-machine-version of a published revision" "$version" \
	"$(sfn publish-state-machine-version --state-machine-arn "$sm" --query stateMachineVersionArn)"
expect "list-state-machine-versions" "$version" "$(sfn list-state-machine-versions --state-machine-arn "$sm" --query 'stateMachineVersions[].stateMachineVersionArn')"

# TagResource, UntagResource, ListTagsForResource.
sfn tag-resource --resource-arn "$sm" --tags key=team,value=seats key=env,value=local >/dev/null
sfn untag-resource --resource-arn "$sm" --tag-keys env >/dev/null
expect "list-tags-for-resource" "team=seats" "$(sfn list-tags-for-resource --resource-arn "$sm" --query 'tags[].[key,value]' | tr '\t' '=')"
expect_error "list-tags-for-resource of an unknown machine" ResourceNotFound sfn list-tags-for-resource --resource-arn "${sm}-absent"

# ValidateStateMachineDefinition.
expect "validate-state-machine-definition OK" OK "$(sfn validate-state-machine-definition --definition "$pass_def" --query result)"
expect "validate-state-machine-definition FAIL" "FAIL MISSING_TRANSITION_TARGET /States/A" \
	"$(sfn validate-state-machine-definition --definition '{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}' \
		--query '[result, diagnostics[0].code, diagnostics[0].location]' | tr '\t' ' ')"

# TestState.
task='{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"process-order"},"End":true}'
expect "test-state with a mocked result" 'SUCCEEDED {"FunctionName":"process-order"}' \
	"$(sfn test-state --definition "$task" --mock '{"result":"{\"orderId\":\"12345\"}"}' --inspection-level DEBUG \
		--query '[status, inspectionData.afterParameters]' | tr '\t' ' ')"
expect "test-state with a mocked error" "FAILED Lambda.ServiceException" \
	"$(sfn test-state --definition "$task" --mock '{"errorOutput":{"error":"Lambda.ServiceException","cause":"Function failed"}}' \
		--query '[status, error]' | tr '\t' ' ')"
expect_error "test-state of an invalid state" InvalidDefinition sfn test-state --definition '{"Type":"Pass"}'

# RedriveExecution: an aborted execution resumes at the state it stopped in.
waiting=$(sfn create-state-machine --name "sfn-ops-redrive-$suffix" --role-arn "$role" --definition "$wait_def" --query stateMachineArn)
x=$(sfn start-execution --state-machine-arn "$waiting" --name first --query executionArn)
expect_error "redrive-execution of a running execution" ExecutionNotRedrivable sfn redrive-execution --execution-arn "$x"
sfn stop-execution --execution-arn "$x" --error Ops --cause "stopped by sfn-ops.sh" >/dev/null
expect "describe-execution after stop" "ABORTED REDRIVABLE 0" \
	"$(sfn describe-execution --execution-arn "$x" --query '[status, redriveStatus, redriveCount]' | tr '\t' ' ')"
sfn redrive-execution --execution-arn "$x" --query redriveDate >/dev/null
expect "describe-execution after redrive" "RUNNING 1" "$(sfn describe-execution --execution-arn "$x" --query '[status, redriveCount]' | tr '\t' ' ')"
expect "list-executions --redrive-filter REDRIVEN" first \
	"$(sfn list-executions --state-machine-arn "$waiting" --redrive-filter REDRIVEN --query 'executions[].name')"
sfn stop-execution --execution-arn "$x" >/dev/null

# StartSyncExecution: the answer carries the result; STANDARD machines are refused.
express=$(sfn create-state-machine --name "sfn-ops-sync-$suffix" --role-arn "$role" --type EXPRESS --definition "$pass_def" --query stateMachineArn)
expect "start-sync-execution" 'SUCCEEDED {"a":1,"v":"one"}' \
	"$(sfn start-sync-execution --state-machine-arn "$express" --input '{"a":1}' --query '[status, output]' | tr '\t' ' ')"
expect_error "start-sync-execution of a STANDARD machine" StateMachineTypeNotSupported sfn start-sync-execution --state-machine-arn "$sm"

for arn in "$sm" "$waiting" "$express"; do
	sfn delete-state-machine --state-machine-arn "$arn" >/dev/null
done
echo "sfn-ops: every operation answered as expected"
