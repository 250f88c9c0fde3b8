package pulumi

import (
	"context"
	"encoding/json"
	"testing"
)

// TestSchemaSecrets keeps what may carry secrets out of Pulumi state in
// plain text: user data and the serving container's environment, as inputs
// and as outputs.
func TestSchemaSecrets(t *testing.T) {
	raw, err := Schema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type props map[string]struct {
		Secret bool `json:"secret"`
	}
	var spec struct {
		Resources map[string]struct {
			InputProperties props `json:"inputProperties"`
			Properties      props `json:"properties"`
		} `json:"resources"`
		Types map[string]struct {
			Properties props `json:"properties"`
		} `json:"types"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ token, prop string }{
		{"mlplatform:index:GpuCluster", "userData"},
		{"mlplatform:index:CpuFootprint", "userData"},
	} {
		r := spec.Resources[tc.token]
		if !r.InputProperties[tc.prop].Secret || !r.Properties[tc.prop].Secret {
			t.Errorf("%s %s: not a secret (input %v, output %v)", tc.token, tc.prop, r.InputProperties[tc.prop].Secret, r.Properties[tc.prop].Secret)
		}
	}
	// The Platform component's training cluster.
	if !spec.Types["mlplatform:index:PlatformTraining"].Properties["userData"].Secret {
		t.Error("mlplatform:index:PlatformTraining userData: not a secret")
	}
	env := false
	for tok, ty := range spec.Types {
		if p, ok := ty.Properties["environment"]; ok {
			env = true
			if !p.Secret {
				t.Errorf("%s environment: not a secret", tok)
			}
		}
	}
	if !env {
		t.Error("no type with environment: the serving model lost it")
	}
}
