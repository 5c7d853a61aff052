package stack

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/seatsaga/seatsaga/internal/tables"
)

func TestTablesFollowTheSharedDefinitions(t *testing.T) {
	s := synthesized(t)
	if got := len(s.ofType("AWS::DynamoDB::Table")); got != len(tables.All()) {
		t.Errorf("%d tables, want %d", got, len(tables.All()))
	}
	for _, def := range tables.All() {
		t.Run(def.Name, func(t *testing.T) {
			_, r := s.byPath(t, "Data/"+def.Name+"/Resource")
			p := props(r)
			wantKeys := []any{map[string]any{"AttributeName": def.PartitionKey.Name, "KeyType": "HASH"}}
			if def.SortKey != nil {
				wantKeys = append(wantKeys, map[string]any{"AttributeName": def.SortKey.Name, "KeyType": "RANGE"})
			}
			if asJSON(p["KeySchema"]) != asJSON(wantKeys) {
				t.Errorf("KeySchema = %s, want %s", asJSON(p["KeySchema"]), asJSON(wantKeys))
			}
			attrTypes := map[string]string{}
			for _, a := range p["AttributeDefinitions"].([]any) {
				m := a.(map[string]any)
				attrTypes[m["AttributeName"].(string)] = m["AttributeType"].(string)
			}
			if attrTypes[def.PartitionKey.Name] != string(def.PartitionKey.Type) {
				t.Errorf("partition key %s type = %q, want %q", def.PartitionKey.Name, attrTypes[def.PartitionKey.Name], def.PartitionKey.Type)
			}

			gsis := map[string]map[string]any{}
			if list, ok := p["GlobalSecondaryIndexes"].([]any); ok {
				for _, g := range list {
					m := g.(map[string]any)
					gsis[m["IndexName"].(string)] = m
				}
			}
			if len(gsis) != len(def.Indexes) {
				t.Errorf("%d GSIs, want %d", len(gsis), len(def.Indexes))
			}
			for _, ix := range def.Indexes {
				g, ok := gsis[ix.Name]
				if !ok {
					t.Errorf("GSI %s missing", ix.Name)
					continue
				}
				want := []any{map[string]any{"AttributeName": ix.PartitionKey.Name, "KeyType": "HASH"}}
				if ix.SortKey != nil {
					want = append(want, map[string]any{"AttributeName": ix.SortKey.Name, "KeyType": "RANGE"})
				}
				if asJSON(g["KeySchema"]) != asJSON(want) {
					t.Errorf("GSI %s keys = %s, want %s", ix.Name, asJSON(g["KeySchema"]), asJSON(want))
				}
				if got := g["Projection"].(map[string]any)["ProjectionType"]; got != string(ix.Projection) {
					t.Errorf("GSI %s projection = %v, want %s", ix.Name, got, ix.Projection)
				}
				if attrTypes[ix.PartitionKey.Name] == "" {
					t.Errorf("GSI %s key %s has no attribute definition", ix.Name, ix.PartitionKey.Name)
				}
			}

			if p["BillingMode"] != "PAY_PER_REQUEST" {
				t.Errorf("BillingMode = %v, want on demand", p["BillingMode"])
			}
			if asJSON(p["PointInTimeRecoverySpecification"]) != `{"PointInTimeRecoveryEnabled":true}` {
				t.Errorf("PITR = %s", asJSON(p["PointInTimeRecoverySpecification"]))
			}
			if asJSON(p["SSESpecification"]) != `{"SSEEnabled":true}` {
				t.Errorf("encryption = %s, want AWS-managed SSE", asJSON(p["SSESpecification"]))
			}
			stream, hasStream := p["StreamSpecification"].(map[string]any)
			switch {
			case def.StreamNewImage && (!hasStream || stream["StreamViewType"] != "NEW_IMAGE"):
				t.Errorf("stream = %v, want NEW_IMAGE", p["StreamSpecification"])
			case !def.StreamNewImage && hasStream:
				t.Errorf("unexpected stream %v", stream)
			}
			ttl, hasTTL := p["TimeToLiveSpecification"].(map[string]any)
			switch {
			case def.TTLAttribute != "" && (!hasTTL || ttl["AttributeName"] != def.TTLAttribute || ttl["Enabled"] != true):
				t.Errorf("TTL = %v, want %s", p["TimeToLiveSpecification"], def.TTLAttribute)
			case def.TTLAttribute == "" && hasTTL:
				t.Errorf("unexpected TTL %v", ttl)
			}
			// The deployed name is the stack prefix plus the logical name, as
			// internal/tables.Names computes it from SEATSAGA_TABLE_PREFIX.
			if want := `{"Fn::Join":["",[{"Ref":"AWS::StackName"},"-` + def.Name + `"]]}`; asJSON(p["TableName"]) != want {
				t.Errorf("TableName = %s, want %s", asJSON(p["TableName"]), want)
			}
			// A development stage can be torn down.
			if p["DeletionProtectionEnabled"] != false || r["DeletionPolicy"] != "Delete" {
				t.Errorf("dev stage: deletion protection %v, policy %v; want false, Delete", p["DeletionProtectionEnabled"], r["DeletionPolicy"])
			}
		})
	}
}

func TestProductionStageProtectsAndRetainsData(t *testing.T) {
	p := DefaultProps()
	p.Stage = "prod"
	s, err := synthesize(p, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range tables.All() {
		_, r := s.byPath(t, "Data/"+def.Name+"/Resource")
		if props(r)["DeletionProtectionEnabled"] != true || r["DeletionPolicy"] != "Retain" || r["UpdateReplacePolicy"] != "Retain" {
			t.Errorf("%s: deletion protection %v, policies %v/%v; want true, Retain/Retain", def.Name,
				props(r)["DeletionProtectionEnabled"], r["DeletionPolicy"], r["UpdateReplacePolicy"])
		}
	}
	for _, typ := range []string{"AWS::SecretsManager::Secret", "AWS::Logs::LogGroup", "AWS::SQS::Queue"} {
		for id, r := range s.ofType(typ) {
			if r["DeletionPolicy"] != "Retain" {
				t.Errorf("%s %s: DeletionPolicy %v, want Retain in production", typ, id, r["DeletionPolicy"])
			}
		}
	}
	mustNotPanic(t, "user pool deletion protection", func() {
		s.template.HasResourceProperties(jsii.String("AWS::Cognito::UserPool"), assertions.Match_ObjectLike(&map[string]any{
			"DeletionProtection": "ACTIVE",
		}))
	})
}
