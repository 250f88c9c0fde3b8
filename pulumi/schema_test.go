package pulumi

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
)

// TestSchemaGolden fails when pulumi/schema.json is stale. Regenerate it
// (and the SDKs) with: go run ./pulumi/cmd/gen-sdk
func TestSchemaGolden(t *testing.T) {
	got, err := Schema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatalf("reading the golden schema: %v (generate it with go run ./pulumi/cmd/gen-sdk)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("pulumi/schema.json is stale: regenerate it and the SDKs with go run ./pulumi/cmd/gen-sdk\n(got %d bytes, golden %d bytes)", len(got), len(want))
	}
}

func TestSchemaTokens(t *testing.T) {
	raw, err := Schema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Name      string                     `json:"name"`
		Resources map[string]json.RawMessage `json:"resources"`
		Config    struct {
			Variables map[string]json.RawMessage `json:"variables"`
		} `json:"config"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Name != "mlplatform" {
		t.Errorf("name = %q", spec.Name)
	}
	for _, tok := range []string{"mlplatform:index:ResidencyGuard", "mlplatform:index:GpuCluster", "mlplatform:index:FeatureStore", "mlplatform:index:Platform"} {
		if _, ok := spec.Resources[tok]; !ok {
			t.Errorf("schema lacks %s", tok)
		}
	}
	for _, v := range []string{"region", "profile", "endpoints", "residency", "defaultTags"} {
		if _, ok := spec.Config.Variables[v]; !ok {
			t.Errorf("schema config lacks %s", v)
		}
	}
}

// TestSchemaReservedNames: the SDK fields the provider sets aside in Check
// (sdkFields) must never be declared properties, or their values would be
// dropped.
func TestSchemaReservedNames(t *testing.T) {
	raw, err := Schema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Config struct {
			Variables map[string]json.RawMessage `json:"variables"`
		} `json:"config"`
		Provider struct {
			InputProperties map[string]json.RawMessage `json:"inputProperties"`
		} `json:"provider"`
		Resources map[string]struct {
			InputProperties map[string]json.RawMessage `json:"inputProperties"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	for _, f := range sdkFields {
		if _, ok := spec.Config.Variables[f]; ok {
			t.Errorf("config declares %s, which the SDKs send for the engine", f)
		}
		if _, ok := spec.Provider.InputProperties[f]; ok {
			t.Errorf("the provider declares %s, which the SDKs send for the engine", f)
		}
		for tok, r := range spec.Resources {
			if _, ok := r.InputProperties[f]; ok {
				t.Errorf("%s declares %s, which the SDKs send for the engine", tok, f)
			}
		}
	}
}
