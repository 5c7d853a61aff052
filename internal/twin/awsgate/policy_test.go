package awsgate

import (
	"testing"

	"github.com/seatsaga/seatsaga/internal/deploy"
)

const (
	seatsARN   = "arn:aws:dynamodb:us-east-1:000000000000:table/p-Seats"
	outboxARN  = "arn:aws:dynamodb:us-east-1:000000000000:table/p-Outbox"
	machineARN = "arn:aws:states:us-east-1:000000000000:stateMachine:seatsaga-reservation"
)

func TestAllowedEvaluatesActionsAndResourcesAsIAMDoes(t *testing.T) {
	getSeats := deploy.Statement{Actions: []string{"dynamodb:GetItem"}, Resources: []string{seatsARN}}
	cases := []struct {
		name       string
		statements []deploy.Statement
		request    Request
		want       bool
	}{
		{"exact action on exact resource", []deploy.Statement{getSeats},
			Request{"dynamodb:GetItem", seatsARN}, true},
		{"another action on the resource", []deploy.Statement{getSeats},
			Request{"dynamodb:PutItem", seatsARN}, false},
		{"the action on another table", []deploy.Statement{getSeats},
			Request{"dynamodb:GetItem", outboxARN}, false},
		{"actions compare without case", []deploy.Statement{getSeats},
			Request{"DynamoDB:getitem", seatsARN}, true},
		{"resources compare with case", []deploy.Statement{getSeats},
			Request{"dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:000000000000:table/p-seats"}, false},
		{"action wildcard over a service",
			[]deploy.Statement{{Actions: []string{"dynamodb:*"}, Resources: []string{seatsARN}}},
			Request{"dynamodb:DeleteItem", seatsARN}, true},
		{"action wildcard within a name",
			[]deploy.Statement{{Actions: []string{"dynamodb:Get*"}, Resources: []string{seatsARN}}},
			Request{"dynamodb:GetRecords", seatsARN}, true},
		{"action wildcard does not cross services",
			[]deploy.Statement{{Actions: []string{"dynamodb:*"}, Resources: []string{"*"}}},
			Request{"states:StartExecution", machineARN}, false},
		{"question mark is one character",
			[]deploy.Statement{{Actions: []string{"dynamodb:?etItem"}, Resources: []string{seatsARN}}},
			Request{"dynamodb:GetItem", seatsARN}, true},
		{"index wildcard allows an index",
			[]deploy.Statement{{Actions: []string{"dynamodb:Query"}, Resources: []string{seatsARN + "/index/*"}}},
			Request{"dynamodb:Query", seatsARN + "/index/byEvent"}, true},
		{"index wildcard does not allow the table",
			[]deploy.Statement{{Actions: []string{"dynamodb:Query"}, Resources: []string{seatsARN + "/index/*"}}},
			Request{"dynamodb:Query", seatsARN}, false},
		{"the table does not allow its indexes",
			[]deploy.Statement{{Actions: []string{"dynamodb:Query"}, Resources: []string{seatsARN}}},
			Request{"dynamodb:Query", seatsARN + "/index/byEvent"}, false},
		{"index wildcard does not reach a longer table name",
			[]deploy.Statement{{Actions: []string{"dynamodb:Query"}, Resources: []string{seatsARN + "/index/*"}}},
			Request{"dynamodb:Query", seatsARN + "Archive/index/byEvent"}, false},
		{"stream wildcard allows any label",
			[]deploy.Statement{{Actions: []string{"dynamodb:GetRecords"}, Resources: []string{outboxARN + "/stream/*"}}},
			Request{"dynamodb:GetRecords", outboxARN + "/stream/2026-12-01T23:26:03.929"}, true},
		{"a region and account wildcard allows DynamoDB Local's stream ARN",
			[]deploy.Statement{{Actions: []string{"dynamodb:DescribeStream"}, Resources: []string{"arn:aws:dynamodb:*:*:table/p-Outbox/stream/*"}}},
			Request{"dynamodb:DescribeStream", "arn:aws:dynamodb:ddblocal:000000000000:table/p-Outbox/stream/2026-12-01T23:26:03.929"}, true},
		{"executions wildcard allows an execution of the machine",
			[]deploy.Statement{{Actions: []string{"states:DescribeExecution"}, Resources: []string{"arn:aws:states:us-east-1:000000000000:execution:seatsaga-reservation:*"}}},
			Request{"states:DescribeExecution", "arn:aws:states:us-east-1:000000000000:execution:seatsaga-reservation:r-1"}, true},
		{"executions wildcard does not allow another machine's",
			[]deploy.Statement{{Actions: []string{"states:DescribeExecution"}, Resources: []string{"arn:aws:states:us-east-1:000000000000:execution:seatsaga-reservation:*"}}},
			Request{"states:DescribeExecution", "arn:aws:states:us-east-1:000000000000:execution:seatsaga-reservation2:r-1"}, false},
		{"a star resource allows everything",
			[]deploy.Statement{{Actions: []string{"dynamodb:ListTables"}, Resources: []string{"*"}}},
			Request{"dynamodb:ListTables", AnyResource}, true},
		{"an ARN pattern does not allow a call on no resource",
			[]deploy.Statement{{Actions: []string{"dynamodb:ListStreams"}, Resources: []string{"arn:aws:dynamodb:*"}}},
			Request{"dynamodb:ListStreams", AnyResource}, false},
		{"action and resource must come from one statement",
			[]deploy.Statement{
				{Actions: []string{"dynamodb:GetItem"}, Resources: []string{outboxARN}},
				{Actions: []string{"dynamodb:PutItem"}, Resources: []string{seatsARN}},
			},
			Request{"dynamodb:GetItem", seatsARN}, false},
		{"no statements allow nothing", nil, Request{"dynamodb:GetItem", seatsARN}, false},
		{"a star crosses colons: a service-wide pattern allows a table",
			[]deploy.Statement{{Actions: []string{"dynamodb:GetItem"}, Resources: []string{"arn:aws:dynamodb:*"}}},
			Request{"dynamodb:GetItem", seatsARN}, true},
		{"a star ending the region segment reaches past the account",
			[]deploy.Statement{{Actions: []string{"dynamodb:GetItem"}, Resources: []string{"arn:aws:dynamodb:*:table/p-Seats"}}},
			Request{"dynamodb:GetItem", seatsARN}, true},
		{"a star crosses slashes within the resource",
			[]deploy.Statement{{Actions: []string{"dynamodb:Query"}, Resources: []string{"arn:aws:dynamodb:us-east-1:000000000000:table/*"}}},
			Request{"dynamodb:Query", seatsARN + "/index/byEvent"}, true},
		{"a question mark matches a colon",
			[]deploy.Statement{{Actions: []string{"dynamodb:GetItem"}, Resources: []string{"arn:aws:dynamodb:us-east-1?000000000000:table/p-Seats"}}},
			Request{"dynamodb:GetItem", seatsARN}, true},
		{"an unknown task token is allowed by the action on any machine",
			[]deploy.Statement{{Actions: []string{"states:SendTaskSuccess"}, Resources: []string{machineARN}}},
			Request{"states:SendTaskSuccess", UnknownTaskToken}, true},
		{"an unknown task token is allowed by an action wildcard",
			[]deploy.Statement{{Actions: []string{"states:SendTask*"}, Resources: []string{machineARN}}},
			Request{"states:SendTaskHeartbeat", UnknownTaskToken}, true},
		{"an unknown task token is denied without the action",
			[]deploy.Statement{{Actions: []string{"states:SendTaskFailure", "states:StartExecution"}, Resources: []string{"*"}}},
			Request{"states:SendTaskSuccess", UnknownTaskToken}, false},
		{"an unknown task token is denied by a statement on no resource",
			[]deploy.Statement{{Actions: []string{"states:SendTaskSuccess"}}},
			Request{"states:SendTaskSuccess", UnknownTaskToken}, false},
		{"admin allows everything",
			[]deploy.Statement{{Actions: []string{"*"}, Resources: []string{"*"}}},
			Request{"secretsmanager:GetSecretValue", "arn:aws:secretsmanager:us-east-1:000000000000:secret:x-AbCdEf"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Allowed(c.statements, c.request); got != c.want {
				t.Fatalf("Allowed(%v, %+v) = %v, want %v", c.statements, c.request, got, c.want)
			}
		})
	}
}

func TestWildcardMatchBacktracksOverRepeatedText(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"", "", true},
		{"", "a", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"*/index/*", "table/t/index/i", true},
		{"*ab", "aab", true},
		{"a**b", "ab", true},
		{"a?c", "ac", false},
		{"a:*", "a:b:c/d", true},
		{"*:c", "a:b:c", true},
		{"a?b", "a:b", true},
		{"a?b", "a/b", true},
		// ? is one character, not one byte.
		{"seat-?", "seat-é", true},
		{"seat-??", "seat-é", false},
		{"*-?", "seat-日", true},
		{"?", "日", true},
		{"*日", "seat-日", true},
		{"*é", "seat-e", false},
	}
	for _, c := range cases {
		if got := wildcardMatch(c.pattern, c.s, false); got != c.want {
			t.Errorf("wildcardMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}
