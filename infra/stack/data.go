package stack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/internal/tables"
)

// DataProps configures the tables.
type DataProps struct {
	// Production turns on deletion protection and keeps tables when the stack is deleted.
	Production bool
	// Definitions are the tables to declare; empty means tables.All().
	Definitions []tables.Table
}

// Data holds seatsaga's DynamoDB tables, declared from the shared definitions in
// internal/tables so that the deployed tables and the local ones cannot drift.
type Data struct {
	constructs.Construct
	// Tables maps logical table names (tables.SeatsTable, ...) to the deployed tables.
	Tables map[string]awsdynamodb.Table
	defs   map[string]tables.Table
}

// NewData declares every table: on demand, point-in-time recovery, AWS-managed encryption,
// TTL and the outbox stream as the definitions say.
func NewData(scope constructs.Construct, id string, p DataProps) *Data {
	c := constructs.NewConstruct(scope, jsii.String(id))
	defs := p.Definitions
	if len(defs) == 0 {
		defs = tables.All()
	}
	removal := awscdk.RemovalPolicy_DESTROY
	if p.Production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	d := &Data{Construct: c, Tables: map[string]awsdynamodb.Table{}, defs: map[string]tables.Table{}}
	for _, def := range defs {
		props := &awsdynamodb.TableProps{
			TableName:    jsii.String(*d.Prefix() + def.Name),
			PartitionKey: attribute(def.PartitionKey),
			BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
			PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
				PointInTimeRecoveryEnabled: jsii.Bool(true),
			},
			Encryption:         awsdynamodb.TableEncryption_AWS_MANAGED,
			DeletionProtection: jsii.Bool(p.Production),
			RemovalPolicy:      removal,
		}
		if def.SortKey != nil {
			props.SortKey = attribute(*def.SortKey)
		}
		if def.StreamNewImage {
			props.Stream = awsdynamodb.StreamViewType_NEW_IMAGE
		}
		if def.TTLAttribute != "" {
			props.TimeToLiveAttribute = jsii.String(def.TTLAttribute)
		}
		t := awsdynamodb.NewTable(c, jsii.String(def.Name), props)
		for _, ix := range def.Indexes {
			gsi := &awsdynamodb.GlobalSecondaryIndexProps{
				IndexName:      jsii.String(ix.Name),
				PartitionKey:   attribute(ix.PartitionKey),
				ProjectionType: projection(ix.Projection),
			}
			if ix.SortKey != nil {
				gsi.SortKey = attribute(*ix.SortKey)
			}
			t.AddGlobalSecondaryIndex(gsi)
		}
		d.Tables[def.Name] = t
		d.defs[def.Name] = def
	}
	return d
}

// Prefix is what deployed table names start with: the stack's name and a dash, so that two
// stages in one account and Region never share a table. The functions receive it as
// SEATSAGA_TABLE_PREFIX and name tables the way internal/tables.Names does.
func (d *Data) Prefix() *string {
	return jsii.String(*awscdk.Aws_STACK_NAME() + "-")
}

// Table returns a declared table by logical name; asking for one that was not declared is a
// programming error in the stack.
func (d *Data) Table(logical string) awsdynamodb.Table {
	t, ok := d.Tables[logical]
	if !ok {
		panic(fmt.Sprintf("stack: table %q is not declared", logical))
	}
	return t
}

func attribute(a tables.Attr) *awsdynamodb.Attribute {
	t := awsdynamodb.AttributeType_STRING
	switch a.Type {
	case tables.Number:
		t = awsdynamodb.AttributeType_NUMBER
	case tables.String:
	default:
		panic(fmt.Sprintf("stack: attribute %s has unknown type %q", a.Name, a.Type))
	}
	return &awsdynamodb.Attribute{Name: jsii.String(a.Name), Type: t}
}

func projection(p tables.Projection) awsdynamodb.ProjectionType {
	switch p {
	case tables.ProjectKeysOnly:
		return awsdynamodb.ProjectionType_KEYS_ONLY
	case tables.ProjectAll, "":
		return awsdynamodb.ProjectionType_ALL
	default:
		panic(fmt.Sprintf("stack: unknown projection %q", p))
	}
}

// Definition returns the shared definition a table was declared from.
func (d *Data) Definition(logical string) tables.Table {
	d.Table(logical)
	return d.defs[logical]
}
