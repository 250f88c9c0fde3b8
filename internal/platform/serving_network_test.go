package platform

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func servingVPCSpec() ServingEndpointSpec {
	s := servingSpec()
	s.VPC = &ServingVPC{SubnetIDs: []string{"subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"}, SecurityGroupIDs: []string{"sg-0a1b2c3d4e5f60718"}}
	return s
}

func serverlessSpec() ServingEndpointSpec {
	s := servingSpec()
	s.Variants[0] = ServingVariant{Name: "small", Serverless: &ServingServerless{MemoryMB: 2048, MaxConcurrency: 5}}
	return s
}

// Every rule of vpc_config and network_isolation that needs no AWS call,
// each on its attribute path.
func TestValidateServingNetwork(t *testing.T) {
	on, off := true, false
	many := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, prefix+strings.Repeat("0", 16-len(string(rune('a'+i))))+string(rune('a'+i)))
		}
		return out
	}
	tests := []struct {
		name    string
		spec    ServingEndpointSpec
		edit    func(*ServingEndpointSpec)
		unknown []string
		path    string // "" means valid
		msg     string
	}{
		{name: "valid vpc", spec: servingVPCSpec()},
		{name: "isolation off on instances", spec: servingSpec(), edit: func(s *ServingEndpointSpec) { s.NetworkIsolation = &off }},
		{name: "no subnet", spec: servingVPCSpec(), edit: func(s *ServingEndpointSpec) { s.VPC.SubnetIDs = nil }, path: "vpc_config.subnet_ids", msg: "at least one subnet"},
		{name: "no security group", spec: servingVPCSpec(), edit: func(s *ServingEndpointSpec) { s.VPC.SecurityGroupIDs = nil }, path: "vpc_config.security_group_ids", msg: "at least one security group"},
		{name: "bad subnet id", spec: servingVPCSpec(), edit: func(s *ServingEndpointSpec) { s.VPC.SubnetIDs[1] = "subnet_1" }, path: "vpc_config.subnet_ids[1]", msg: "not a subnet id"},
		{name: "bad group id", spec: servingVPCSpec(), edit: func(s *ServingEndpointSpec) { s.VPC.SecurityGroupIDs[0] = "default" }, path: "vpc_config.security_group_ids[0]", msg: "not a security group id"},
		{name: "subnet twice", spec: servingVPCSpec(), edit: func(s *ServingEndpointSpec) { s.VPC.SubnetIDs[1] = s.VPC.SubnetIDs[0] }, path: "vpc_config.subnet_ids[1]", msg: "listed twice"},
		{name: "too many subnets", spec: servingVPCSpec(), edit: func(s *ServingEndpointSpec) { s.VPC.SubnetIDs = many("subnet-", 17) }, path: "vpc_config.subnet_ids", msg: "at most 16"},
		{name: "too many groups", spec: servingVPCSpec(), edit: func(s *ServingEndpointSpec) { s.VPC.SecurityGroupIDs = many("sg-", 6) }, path: "vpc_config.security_group_ids", msg: "at most 5"},
		{name: "unknown subnet skipped", spec: servingVPCSpec(), edit: func(s *ServingEndpointSpec) { s.VPC.SubnetIDs[1] = "" }, unknown: []string{"vpc_config.subnet_ids[1]"}},
		{name: "unknown vpc skipped", spec: servingVPCSpec(), edit: func(s *ServingEndpointSpec) { s.VPC.SubnetIDs = nil }, unknown: []string{"vpc_config"}},
		{name: "serverless default", spec: serverlessSpec()},
		{name: "serverless isolated", spec: serverlessSpec(), edit: func(s *ServingEndpointSpec) { s.NetworkIsolation = &on }, path: "network_isolation", msg: "serverless inference does not support network isolation"},
		{name: "serverless in a vpc", spec: serverlessSpec(), edit: func(s *ServingEndpointSpec) { s.VPC = servingVPCSpec().VPC }, path: "vpc_config", msg: "does not run in a VPC"},
		{name: "serverless, variants unknown", spec: serverlessSpec(), edit: func(s *ServingEndpointSpec) { s.NetworkIsolation = &on }, unknown: []string{"variants"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.spec
			if tt.edit != nil {
				tt.edit(&s)
			}
			errs := ValidateServingEndpoint(s, tt.unknown)
			if tt.path == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Path == tt.path && strings.Contains(e.Detail, tt.msg) {
					return
				}
			}
			t.Fatalf("want an error at %s containing %q, got %v", tt.path, tt.msg, errs)
		})
	}
}

func TestServingNetworkIsolationDefault(t *testing.T) {
	if !servingSpec().NetworkIsolationOn() {
		t.Error("an instance endpoint that sets nothing is not network-isolated")
	}
	if serverlessSpec().NetworkIsolationOn() {
		t.Error("a serverless endpoint that sets nothing is network-isolated: SageMaker refuses that")
	}
	off := false
	s := servingSpec()
	s.NetworkIsolation = &off
	if s.NetworkIsolationOn() {
		t.Error("network_isolation = false is not honoured")
	}
	if c := servingModelConfig("m", servingSpec(), nil); !c.NetworkIsolation || len(c.SubnetIDs) != 0 {
		t.Errorf("model sent for the defaults: %+v", c)
	}
	if c := servingModelConfig("m", servingVPCSpec(), nil); len(c.SubnetIDs) != 2 || len(c.SecurityGroupIDs) != 1 {
		t.Errorf("model sent with vpc_config: %+v", c)
	}
}

// A change of the model's network is a new model and endpoint config
// (blue/green, in place): a model cannot change. The order of the ids, and
// the default written out, are no change.
func TestPlanServingNetwork(t *testing.T) {
	on, off := true, false
	base := servingSpec()
	withVPC := servingVPCSpec()
	reordered := servingVPCSpec()
	slices.Reverse(reordered.VPC.SubnetIDs)
	otherVPC := servingVPCSpec()
	otherVPC.VPC.SecurityGroupIDs = []string{"sg-0a1b2c3d4e5f60799"}
	explicitOn := servingSpec()
	explicitOn.NetworkIsolation = &on
	explicitOff := servingSpec()
	explicitOff.NetworkIsolation = &off
	tests := []struct {
		name     string
		old, new ServingEndpointSpec
		unknown  []string
		newConf  bool
		path     string
	}{
		{"vpc added", base, withVPC, nil, true, "vpc_config"},
		{"vpc removed", withVPC, base, nil, true, "vpc_config"},
		{"security group changed", withVPC, otherVPC, nil, true, "vpc_config"},
		{"subnets reordered", withVPC, reordered, nil, false, ""},
		{"isolation turned off", base, explicitOff, nil, true, "network_isolation"},
		{"isolation default written out", base, explicitOn, nil, false, ""},
		{"subnet known only at apply", withVPC, withVPC, []string{"vpc_config.subnet_ids[0]"}, true, "vpc_config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanServingEndpoint(tt.old, tt.new, tt.unknown)
			if p.NewConfig() != tt.newConf || len(p.Replace) > 0 {
				t.Fatalf("plan = %+v", p)
			}
			if tt.path != "" && !slices.ContainsFunc(p.Config, func(c Change) bool { return c.Path == tt.path }) {
				t.Errorf("no change at %s: %+v", tt.path, p.Config)
			}
		})
	}
}

// What AWS holds comes back in the declared shape: the declared order of
// the same ids, isolation unset where it was unset and is the default; a
// model that is not what was declared (drift) shows as it is.
func TestReadBackServingNetwork(t *testing.T) {
	on, off := true, false
	declared := servingVPCSpec()
	found := &ServingEndpoint{Spec: servingVPCSpec()}
	slices.Reverse(found.Spec.VPC.SubnetIDs)
	found.Spec.NetworkIsolation = &on
	rb := ReadBackServingEndpointOf(found, declared, "", nil)
	if !slices.Equal(rb.Spec.VPC.SubnetIDs, declared.VPC.SubnetIDs) || rb.Spec.NetworkIsolation != nil {
		t.Errorf("read back %+v isolation %v; want the declared order and isolation unset", rb.Spec.VPC, rb.Spec.NetworkIsolation)
	}
	if PlanServingEndpoint(declared, rb.Spec, nil).NewConfig() {
		t.Error("a read-back of what was declared plans a change")
	}

	drift := &ServingEndpoint{Spec: servingSpec()}
	drift.Spec.NetworkIsolation = &off
	rb = ReadBackServingEndpointOf(drift, declared, "", nil)
	if rb.Spec.VPC != nil || rb.Spec.NetworkIsolation == nil || *rb.Spec.NetworkIsolation {
		t.Errorf("drift read back as %+v, isolation %v; want no VPC and isolation false", rb.Spec.VPC, rb.Spec.NetworkIsolation)
	}
	if p := PlanServingEndpoint(rb.Spec, declared, nil); !p.NewConfig() {
		t.Error("drift of the model's network plans no change")
	}

	// An explicit declaration stays explicit.
	explicit := servingSpec()
	explicit.NetworkIsolation = &on
	found = &ServingEndpoint{Spec: servingSpec()}
	found.Spec.NetworkIsolation = &on
	if rb := ReadBackServingEndpointOf(found, explicit, "", nil); rb.Spec.NetworkIsolation == nil || !*rb.Spec.NetworkIsolation {
		t.Errorf("declared true read back as %v", rb.Spec.NetworkIsolation)
	}
}

// The model the create sends carries the VPC configuration and network
// isolation (on by default), and a refresh reads them back from the model.
func TestServingCreateSendsNetwork(t *testing.T) {
	f := newFakeServing()
	ep, err := createServing(context.Background(), f, nil, servingVPCSpec(), nil, "tok", fastWait)
	if err != nil {
		t.Fatal(err)
	}
	m := f.models[ep.ModelName]
	if m == nil || m.VpcConfig == nil || !slices.Equal(m.VpcConfig.Subnets, servingVPCSpec().VPC.SubnetIDs) ||
		!slices.Equal(m.VpcConfig.SecurityGroupIds, servingVPCSpec().VPC.SecurityGroupIDs) || !aws.ToBool(m.EnableNetworkIsolation) {
		t.Fatalf("CreateModel sent %+v", m)
	}
	if ep.Spec.VPC == nil || len(ep.Spec.VPC.SubnetIDs) != 2 || ep.Spec.NetworkIsolation == nil || !*ep.Spec.NetworkIsolation {
		t.Errorf("read back %+v isolation %v", ep.Spec.VPC, ep.Spec.NetworkIsolation)
	}

	f = newFakeServing()
	ep, err = createServing(context.Background(), f, nil, serverlessSpec(), nil, "tok", fastWait)
	if err != nil {
		t.Fatal(err)
	}
	if m := f.models[ep.ModelName]; m.EnableNetworkIsolation == nil || *m.EnableNetworkIsolation || m.VpcConfig != nil {
		t.Errorf("serverless model sent isolation %v vpc %v; want false sent, no VPC", m.EnableNetworkIsolation, m.VpcConfig)
	}
}

// Turning isolation off is a blue/green update to a new model; the old
// config and model go once the new one serves.
func TestServingUpdateNetworkIsolation(t *testing.T) {
	f, ep := createdFake(t)
	off := false
	s := servingSpec()
	s.NetworkIsolation = &off
	got, err := updateServing(context.Background(), f, nil, ServingEndpointPrior{Spec: servingSpec(), ConfigName: ep.ConfigName, ModelName: ep.ModelName}, s, nil, fastWait)
	if err != nil {
		t.Fatal(err)
	}
	if got.ModelName == ep.ModelName || got.LastDeployment != DeploymentUpdated {
		t.Fatalf("update served model %s (was %s), outcome %q", got.ModelName, ep.ModelName, got.LastDeployment)
	}
	if m := f.models[got.ModelName]; m == nil || aws.ToBool(m.EnableNetworkIsolation) {
		t.Errorf("new model %+v: want isolation off", m)
	}
	if _, left := f.models[ep.ModelName]; left {
		t.Error("the old model is left after the new one serves")
	}
}
