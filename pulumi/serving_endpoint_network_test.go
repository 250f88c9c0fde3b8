package pulumi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

// servingNetworkInputs are servingInputs with vpcConfig and, when set,
// networkIsolation.
func servingNetworkInputs(subnets, groups []property.Value, isolation *bool) property.Map {
	in := servingInputs(svTestImage)
	if subnets != nil {
		in = in.Set("vpcConfig", property.New(property.NewMap(map[string]property.Value{
			"subnetIds": property.New(subnets), "securityGroupIds": property.New(groups),
		})))
	}
	if isolation != nil {
		in = in.Set("networkIsolation", property.New(*isolation))
	}
	return in
}

func ids(vs ...string) []property.Value {
	out := make([]property.Value, len(vs))
	for i, v := range vs {
		out[i] = property.New(v)
	}
	return out
}

// The Pulumi twin of the Terraform network tests: Check refuses a subnet in
// an excluded zone on its property, with no write, and leaves a subnet
// known only at apply to the create; the endpoint is network-isolated by
// default, in the VPC; turning isolation off deploys a new model; a model
// changed outside shows on refresh.
func TestServingEndpoint_network(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-models")
	s := newServer(t, h, awsManagedKeys(map[string]property.Value{"excludedZoneIds": property.New(ids("mec1-az2"))}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := h.Network(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := urn("ServingEndpoint", "fraud")
	h.Shim.ResetLog()
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: servingNetworkInputs(ids(n.Subnets["mec1-az1"], n.Subnets["mec1-az2"]), ids(n.SecurityGroup), nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(check.Failures) != 1 || check.Failures[0].Property != "vpcConfig.subnetIds[1]" || !strings.Contains(check.Failures[0].Reason, "mec1-az2") {
		t.Fatalf("failures = %+v, want one on vpcConfig.subnetIds[1] naming mec1-az2", check.Failures)
	}
	assertNoWrites(t, h)

	unknown, err := s.Check(p.CheckRequest{Urn: u, Inputs: servingNetworkInputs([]property.Value{property.New(property.Computed)}, ids(n.SecurityGroup), nil)})
	if err != nil || len(unknown.Failures) != 0 {
		t.Fatalf("check of a subnet known only at apply: %v %+v", err, unknown.Failures)
	}

	check, err = s.Check(p.CheckRequest{Urn: u, Inputs: servingNetworkInputs(ids(n.Subnets["mec1-az1"]), ids(n.SecurityGroup), nil)})
	if err != nil || len(check.Failures) != 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.ServingModel(ctx, "fraud")
	if err != nil {
		t.Fatal(err)
	}
	if !aws.ToBool(m.EnableNetworkIsolation) || m.VpcConfig == nil || len(m.VpcConfig.Subnets) != 1 || m.VpcConfig.Subnets[0] != n.Subnets["mec1-az1"] {
		t.Fatalf("model served: isolation %v, VpcConfig %+v", aws.ToBool(m.EnableNetworkIsolation), m.VpcConfig)
	}
	if v, ok := created.Properties.GetOk("networkIsolation"); ok && !v.IsNull() {
		t.Errorf("networkIsolation not declared, recorded as %v: the default stays unset", v)
	}

	off := false
	check2, err := s.Check(p.CheckRequest{Urn: u, State: check.Inputs, Inputs: servingNetworkInputs(ids(n.Subnets["mec1-az1"]), ids(n.SecurityGroup), &off)})
	if err != nil || len(check2.Failures) != 0 {
		t.Fatalf("check of the update: %v %+v", err, check2.Failures)
	}
	d, err := s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check2.Inputs})
	if err != nil || !d.HasChanges || d.DetailedDiff["networkIsolation"].Kind != p.Update {
		t.Fatalf("diff of isolation off: %v %+v, want an in-place update of networkIsolation", err, d)
	}
	updated, err := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, OldInputs: check.Inputs, Inputs: check2.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Properties.Get("modelName").AsString() == created.Properties.Get("modelName").AsString() {
		t.Error("isolation turned off without a new model")
	}
	if m, err := h.ServingModel(ctx, "fraud"); err != nil || aws.ToBool(m.EnableNetworkIsolation) {
		t.Fatalf("model served after the update: %v %v", err, m)
	}

	// Drift: the endpoint moved outside to a model of another network.
	check3, err := s.Check(p.CheckRequest{Urn: u, State: check2.Inputs, Inputs: servingNetworkInputs(nil, nil, nil)})
	if err != nil || len(check3.Failures) != 0 {
		t.Fatalf("check: %v %+v", err, check3.Failures)
	}
	back, err := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: updated.Properties, OldInputs: check2.Inputs, Inputs: check3.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ServeOpenModel(ctx, "fraud"); err != nil {
		t.Fatal(err)
	}
	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: back.Properties, Inputs: check3.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := read.Inputs.GetOk("networkIsolation"); !ok || !v.IsBool() || v.AsBool() {
		t.Errorf("refresh after the model was changed outside: networkIsolation %v, want false (drift)", v)
	}
}
