package platform_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// TestCheckServingNetwork runs the plan-time check of vpc_config against
// the emulator, the policy excluding mec1-az2: each subnet must exist in the
// region and lie in an allowed zone, the subnets in one VPC, the security
// groups in theirs; every finding on its attribute path. A subnet known
// only at apply is not checked at plan, and the create checks it before
// any write.
func TestCheckServingNetwork(t *testing.T) {
	h := acctest.SetupEmulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := platform.Open(ctx, platform.Config{Region: acctest.Region, Endpoints: h.Endpoints(),
		Residency: residency.PolicyConfig{Jurisdiction: "AE", ExcludedZoneIDs: []string{"mec1-az2"}, RequireCustomerManagedKeys: awsManagedKeys()},
		Polling:   platform.PollingEvery(10 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	n, err := h.Network(ctx)
	if err != nil {
		t.Fatal(err)
	}
	az1, az2, az3 := n.Subnets["mec1-az1"], n.Subnets["mec1-az2"], n.Subnets["mec1-az3"]
	if az1 == "" || az2 == "" || az3 == "" {
		t.Fatalf("default subnets %v", n.Subnets)
	}
	spec := func(subnets []string, groups ...string) platform.ServingEndpointSpec {
		return platform.ServingEndpointSpec{
			Name: "fraud",
			Model: platform.ServingModel{Image: "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:1",
				ExecutionRoleARN: "arn:aws:iam::123456789012:role/serving"},
			Variants: []platform.ServingVariant{{Name: "primary", InstanceType: "ml.m5.large", InitialInstanceCount: 1}},
			VPC:      &platform.ServingVPC{SubnetIDs: subnets, SecurityGroupIDs: groups},
		}
	}
	tests := []struct {
		name      string
		spec      platform.ServingEndpointSpec
		unknown   []string
		problem   string // path of a problem, and what its detail says
		says      string
		violation string // path of a residency violation
		rule      string
	}{
		{name: "allowed zones, the VPC's group", spec: spec([]string{az1, az3}, n.SecurityGroup)},
		{name: "subnet in an excluded zone", spec: spec([]string{az1, az2}, n.SecurityGroup), violation: "vpc_config.subnet_ids[1]", rule: residency.RuleZoneExcluded},
		{name: "subnet not in the region", spec: spec([]string{"subnet-0123456789abcdef0"}, n.SecurityGroup), problem: "vpc_config.subnet_ids[0]", says: "does not exist in me-central-1"},
		{name: "subnets of two VPCs", spec: spec([]string{az1, n.OtherSubnet}, n.SecurityGroup), problem: "vpc_config.subnet_ids[1]", says: "choose subnets of one VPC"},
		{name: "group of another VPC", spec: spec([]string{az1}, n.SecurityGroup, n.OtherGroup), problem: "vpc_config.security_group_ids[1]", says: "of the subnets' VPC"},
		{name: "group not found", spec: spec([]string{az1}, "sg-0123456789abcdef0"), problem: "vpc_config.security_group_ids[0]", says: "does not exist"},
		{name: "excluded subnet known only at apply", spec: spec([]string{az1, az2}, n.SecurityGroup), unknown: []string{"vpc_config.subnet_ids[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, vs, _, err := env.CheckServingEndpoint(ctx, tt.spec, tt.unknown)
			if err != nil {
				t.Fatal(err)
			}
			found := tt.problem == ""
			for _, e := range errs {
				if e.Path == tt.problem && strings.Contains(e.Detail, tt.says) {
					found = true
				} else {
					t.Errorf("problem %v", e)
				}
			}
			if !found {
				t.Errorf("no problem at %s saying %q", tt.problem, tt.says)
			}
			found = tt.violation == ""
			for _, v := range vs {
				if v.Path == tt.violation && v.Rule == tt.rule {
					found = true
				} else {
					t.Errorf("violation %+v", v)
				}
			}
			if !found {
				t.Errorf("no %s violation at %s", tt.rule, tt.violation)
			}
		})
	}

	// At apply every value is known: the excluded subnet is refused before
	// anything is written.
	h.Shim.ResetLog()
	_, vs, err := env.CreateServingEndpoint(ctx, spec([]string{az1, az2}, n.SecurityGroup), platform.ServingWait{})
	if !errors.Is(err, platform.ErrServingEndpointResidency) || len(vs) != 1 || vs[0].Path != "vpc_config.subnet_ids[1]" {
		t.Fatalf("create with a subnet in an excluded zone: %v %+v", err, vs)
	}
	if w := h.Shim.Writes(); len(w) != 0 {
		t.Errorf("the refused create wrote: %v", w)
	}
}
