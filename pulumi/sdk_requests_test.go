package pulumi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mlplatform/mlplatform/acctest"
)

// The requests below are what the Pulumi engine (v3.200.0) sends the plugin
// for a TypeScript or Python program, replayed over the provider's gRPC
// interface as the plugin receives them:
//
//   - an explicit provider, `new mlplatform.Provider("uae", {...})`: the
//     generated SDKs JSON-encode object-typed provider inputs
//     (`pulumi.output(args?.endpoints).apply(JSON.stringify)` in provider.ts,
//     `pulumi.runtime.to_json` in provider.py), and the engine adds the plugin
//     `version` the SDK sends with every registration (package.json's version,
//     `_utilities.get_version()`) at the root of the inputs;
//   - the default provider, configured from stack config: the engine sends
//     each config value as a string (objects as JSON) with the `version` of
//     the resources that use it; engines before the `__internal` map also put
//     `pluginDownloadURL` at the root.
//
// Then Configure with the checked inputs, and a resource's Check with the
// inputs a TypeScript `new mlplatform.ResidencyGuard(...)` sends.

func sdkProviderInputs(t *testing.T, h *acctest.Harness) resource.PropertyMap {
	t.Helper()
	js := func(v any) resource.PropertyValue {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return resource.NewProperty(string(b))
	}
	return resource.PropertyMap{
		"region":      resource.NewProperty(acctest.Region),
		"endpoints":   js(h.Endpoints()),
		"residency":   js(map[string]any{"jurisdiction": "AE", "excludedZoneIds": []string{"mec1-az2"}}),
		"defaultTags": js(map[string]string{"owner": "ml-platform"}),
		"version":     resource.NewProperty("0.1.0"),
	}
}

func marshal(t *testing.T, m resource.PropertyMap) *structpb.Struct {
	t.Helper()
	s, err := plugin.MarshalProperties(m, plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, KeepResources: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func unmarshal(t *testing.T, s *structpb.Struct) resource.PropertyMap {
	t.Helper()
	m, err := plugin.UnmarshalProperties(s, plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, KeepResources: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// rpcServer serves the provider as the plugin binary does, minus the socket.
func rpcServer(t *testing.T) pulumirpc.ResourceProviderServer {
	t.Helper()
	prov, err := Plugin()
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.RawServer(Name, "0.1.0", prov)(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSDKRequests_accepted(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-sdk-data")
	createBucket(t, h, "eu-west-1", "eu-sdk-data")
	ctx := context.Background()

	explicit := sdkProviderInputs(t, h)
	defaults := sdkProviderInputs(t, h)
	defaults["pluginDownloadURL"] = resource.NewProperty("https://example.com/mlplatform/releases")

	for name, inputs := range map[string]resource.PropertyMap{"explicit provider": explicit, "default provider": defaults} {
		t.Run(name, func(t *testing.T) {
			s := rpcServer(t)
			provURN := "urn:pulumi:dev::uae-ml-platform::pulumi:providers:mlplatform::uae"
			checked, err := s.CheckConfig(ctx, &pulumirpc.CheckRequest{
				Urn: provURN, Name: "uae", Type: "pulumi:providers:mlplatform",
				Olds: marshal(t, resource.PropertyMap{}), News: marshal(t, inputs),
			})
			if err != nil {
				t.Fatalf("CheckConfig: %v", err)
			}
			for _, f := range checked.GetFailures() {
				t.Errorf("CheckConfig failure: %s: %s", f.GetProperty(), f.GetReason())
			}
			got := unmarshal(t, checked.GetInputs())
			if v := got["version"]; !v.IsString() || v.StringValue() != "0.1.0" {
				t.Errorf("checked inputs lost the plugin version: %v", got)
			}
			if r := got["residency"]; !r.IsObject() || r.ObjectValue()["jurisdiction"].StringValue() != "AE" {
				t.Errorf("checked residency = %v, want the decoded object", r)
			}

			if _, err := s.Configure(ctx, &pulumirpc.ConfigureRequest{
				Args: checked.GetInputs(), AcceptSecrets: true, AcceptResources: true,
			}); err != nil {
				t.Fatalf("Configure: %v", err)
			}

			guardURN := "urn:pulumi:dev::uae-ml-platform::mlplatform:index:ResidencyGuard::data"
			ok, err := s.Check(ctx, &pulumirpc.CheckRequest{
				Urn: guardURN, Name: "data", Type: "mlplatform:index:ResidencyGuard",
				Olds: marshal(t, resource.PropertyMap{}),
				News: marshal(t, resource.PropertyMap{"s3Uris": resource.NewProperty([]resource.PropertyValue{resource.NewProperty("s3://uae-sdk-data")})}),
			})
			if err != nil || len(ok.GetFailures()) > 0 {
				t.Fatalf("Check of a compliant guard: %v %v", err, ok.GetFailures())
			}

			bad, err := s.Check(ctx, &pulumirpc.CheckRequest{
				Urn: guardURN, Name: "data", Type: "mlplatform:index:ResidencyGuard",
				Olds: marshal(t, resource.PropertyMap{}),
				News: marshal(t, resource.PropertyMap{"s3Uris": resource.NewProperty([]resource.PropertyValue{resource.NewProperty("s3://eu-sdk-data")})}),
			})
			if err != nil {
				t.Fatalf("Check of a guard outside the jurisdiction: %v", err)
			}
			if len(bad.GetFailures()) != 1 {
				t.Fatalf("failures = %v, want one residency failure", bad.GetFailures())
			}
			// The engine prints a failure on property P with the value
			// inputs[P]; for the nested s3Uris[0] that would be {<nil>}, so the
			// path leads the reason instead, worded as Terraform's diagnostic.
			f := bad.GetFailures()[0]
			for _, want := range []string{"residency violation: s3-bucket-region", `s3Uris[0] = "s3://eu-sdk-data"`, "Rule: s3-bucket-region (enforce mode).", "Fix: "} {
				if !strings.Contains(f.GetReason(), want) {
					t.Errorf("failure reason lacks %q:\n%s", want, f.GetReason())
				}
			}
			if f.GetProperty() != "" {
				t.Errorf("failure property = %q, want none (the path is in the reason)", f.GetProperty())
			}
			assertNoWrites(t, h)
		})
	}
}

// A resource's Check tolerates the SDK fields too (engines have put
// `version` on resource inputs), and still rejects a misspelt property.
func TestSDKRequests_resourceFields(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-sdk-data")
	s := newServer(t, h, awsManagedKeys(nil))
	inputs := func(extra string) p.CheckRequest {
		m := map[string]resource.PropertyValue{
			"s3Uris": resource.NewProperty([]resource.PropertyValue{resource.NewProperty("s3://uae-sdk-data")}),
			extra:    resource.NewProperty("0.1.0"),
		}
		return p.CheckRequest{Urn: urn("ResidencyGuard", "g"), Inputs: resource.FromResourcePropertyValue(resource.NewProperty(resource.PropertyMap(toKeys(m)))).AsMap()}
	}
	for _, f := range []string{"version", "pluginDownloadURL"} {
		resp, err := s.Check(inputs(f))
		if err != nil || len(resp.Failures) > 0 {
			t.Errorf("Check with %s: %v %v", f, err, resp.Failures)
		}
		if _, ok := resp.Inputs.GetOk(f); ok {
			t.Errorf("Check kept %s in the resource's inputs", f)
		}
	}
	resp, err := s.Check(inputs("s3Urls"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Failures) != 1 || resp.Failures[0].Property != "s3Urls" {
		t.Errorf("Check with a misspelt property: failures %v, want one on s3Urls", resp.Failures)
	}
}

func toKeys(m map[string]resource.PropertyValue) resource.PropertyMap {
	out := resource.PropertyMap{}
	for k, v := range m {
		out[resource.PropertyKey(k)] = v
	}
	return out
}
