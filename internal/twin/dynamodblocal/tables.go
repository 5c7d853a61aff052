package dynamodblocal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seatsaga/seatsaga/internal/tables"
)

// tableWait bounds the wait for a table to become ACTIVE.
const tableWait = 2 * time.Minute

// CreateTables creates each table (all of tables.All() when defs is empty) under names, on
// demand, with its indexes, stream and TTL, and waits until each is ACTIVE. A table that already
// exists is left as it is, so calling it twice is harmless.
func CreateTables(ctx context.Context, client *dynamodb.Client, names tables.Names, defs ...tables.Table) error {
	if len(defs) == 0 {
		defs = tables.All()
	}
	for _, def := range defs {
		name := names.Of(def.Name)
		_, err := client.CreateTable(ctx, CreateTableInput(def, name))
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("dynamodblocal: create table %s: %w", name, err)
		}
		waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 50 * time.Millisecond
			o.MaxDelay = time.Second
		})
		if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableWait); err != nil {
			return fmt.Errorf("dynamodblocal: wait for table %s: %w", name, err)
		}
		if def.TTLAttribute != "" {
			if err := enableTTL(ctx, client, name, def.TTLAttribute); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteTables deletes each table (all of tables.All() when defs is empty) under names; a table
// that does not exist is not an error.
func DeleteTables(ctx context.Context, client *dynamodb.Client, names tables.Names, defs ...tables.Table) error {
	if len(defs) == 0 {
		defs = tables.All()
	}
	var errs []error
	for _, def := range defs {
		name := names.Of(def.Name)
		_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var notFound *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &notFound) {
			errs = append(errs, fmt.Errorf("dynamodblocal: delete table %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// CreateTableInput renders one table definition as the CreateTable request, named name.
func CreateTableInput(def tables.Table, name string) *dynamodb.CreateTableInput {
	var attrs []types.AttributeDefinition
	seen := map[string]bool{}
	addAttr := func(a tables.Attr) {
		if seen[a.Name] {
			return
		}
		seen[a.Name] = true
		attrs = append(attrs, types.AttributeDefinition{
			AttributeName: aws.String(a.Name),
			AttributeType: types.ScalarAttributeType(a.Type),
		})
	}
	keySchema := func(pk tables.Attr, sk *tables.Attr) []types.KeySchemaElement {
		addAttr(pk)
		ks := []types.KeySchemaElement{{AttributeName: aws.String(pk.Name), KeyType: types.KeyTypeHash}}
		if sk != nil {
			addAttr(*sk)
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk.Name), KeyType: types.KeyTypeRange})
		}
		return ks
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   keySchema(def.PartitionKey, def.SortKey),
	}
	for _, ix := range def.Indexes {
		proj := ix.Projection
		if proj == "" {
			proj = tables.ProjectAll
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  keySchema(ix.PartitionKey, ix.SortKey),
			Projection: &types.Projection{ProjectionType: types.ProjectionType(proj)},
		})
	}
	in.AttributeDefinitions = attrs
	if def.StreamNewImage {
		in.StreamSpecification = &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewImage,
		}
	}
	return in
}

func enableTTL(ctx context.Context, client *dynamodb.Client, name, attr string) error {
	desc, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("dynamodblocal: describe TTL of %s: %w", name, err)
	}
	if d := desc.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == attr &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attr),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("dynamodblocal: enable TTL on %s.%s: %w", name, attr, err)
	}
	return nil
}
