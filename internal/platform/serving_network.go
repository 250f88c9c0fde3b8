package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// The network of a serving endpoint's model: where its container's network
// interfaces go (vpc_config) and whether it may make network calls at all
// (network_isolation). Both are properties of the SageMaker model, which
// cannot change: a change is a new model and endpoint config, deployed
// blue/green like any model change.

// Attribute paths of the network settings.
const (
	ServingVPCPath              = "vpc_config"
	ServingSubnetsPath          = ServingVPCPath + ".subnet_ids"
	ServingSecurityGroupsPath   = ServingVPCPath + ".security_group_ids"
	ServingNetworkIsolationPath = "network_isolation"
)

// Limits of a SageMaker VpcConfig.
const (
	ServingMaxSubnets        = 16
	ServingMaxSecurityGroups = 5
)

// ServingVPC puts the model's container in the customer's VPC: its network
// interfaces in SubnetIDs (one VPC), with SecurityGroupIDs (of that VPC).
type ServingVPC struct {
	SubnetIDs        []string
	SecurityGroupIDs []string
}

// ServingNetworkIsolationDefault is network_isolation when it is not set:
// on, so that the container can make no network call in or out (it cannot
// send what it serves anywhere, nor fetch code), except on a serverless
// endpoint, which SageMaker runs without network isolation (serverless
// inference supports neither network isolation nor a VPC).
func ServingNetworkIsolationDefault(variants []ServingVariant) bool {
	return !servingServerless(variants)
}

func servingServerless(variants []ServingVariant) bool {
	return slices.ContainsFunc(variants, func(v ServingVariant) bool { return v.Serverless != nil })
}

// NetworkIsolationOn is whether the model runs network-isolated: as
// declared, else ServingNetworkIsolationDefault.
func (s ServingEndpointSpec) NetworkIsolationOn() bool {
	if s.NetworkIsolation != nil {
		return *s.NetworkIsolation
	}
	return ServingNetworkIsolationDefault(s.Variants)
}

// svNetwork checks vpc_config and network_isolation without AWS: id
// formats, counts, duplicates, and what serverless endpoints cannot take.
func svNetwork(v *validator, s ServingEndpointSpec) {
	serverless := v.unknown.known(servingVariantsPath) && servingServerless(s.Variants)
	if iso := s.NetworkIsolation; iso != nil && *iso && serverless {
		v.add(ServingNetworkIsolationPath, "network_isolation = true on a serverless endpoint: SageMaker serverless inference does not support network isolation. Set network_isolation = false (or leave it unset: serverless endpoints default to false), or serve on instances")
	}
	c := s.VPC
	if c == nil {
		return
	}
	if serverless {
		v.add(ServingVPCPath, "the endpoint is serverless, and SageMaker serverless inference does not run in a VPC: remove vpc_config, or serve on instances")
	}
	svIDs(v, ServingSubnetsPath, c.SubnetIDs, ServingMaxSubnets, "subnet", subnetIDRE().MatchString, "subnet-0123456789abcdef0")
	svIDs(v, ServingSecurityGroupsPath, c.SecurityGroupIDs, ServingMaxSecurityGroups, "security group", securityGroupIDRE().MatchString, "sg-0123456789abcdef0")
}

func svIDs(v *validator, path string, ids []string, most int, what string, ok func(string) bool, example string) {
	switch {
	case len(ids) == 0:
		v.add(path, "vpc_config needs at least one %s", what)
	case len(ids) > most:
		v.add(path, "%d %ss; a SageMaker VpcConfig takes at most %d", len(ids), what, most)
	}
	seen := map[string]int{}
	for i, id := range ids {
		at := fmt.Sprintf("%s[%d]", path, i)
		if !v.unknown.known(at) {
			continue
		}
		if j, dup := seen[id]; dup {
			v.add(at, "%s %s is listed twice (also at [%d])", what, id, j)
			continue
		}
		seen[id] = i
		if !ok(id) {
			v.add(at, "%q is not a %s id (it looks like %s)", id, what, example)
		}
	}
}

// lookupSubnets finds each subnet of ids (at path[i]) whose value is known
// and well formed: a subnet the region does not hold is a problem at its
// path, with fix; the zone of each one found is a residency reference at
// its path, so that the policy decides on it (region allowed, zone not
// excluded) as on every zone. found[i] is the subnet at ids[i], nil when
// not looked up or not found. The rule of every resource that takes
// subnets.
func (e *Env) lookupSubnets(ctx context.Context, path string, ids []string, known func(string) bool, fix string) (found []*cloud.Subnet, refs []residency.Ref, problems []Problem, err error) {
	found = make([]*cloud.Subnet, len(ids))
	for i, id := range ids {
		at := fmt.Sprintf("%s[%d]", path, i)
		if !known(at) || !subnetIDRE().MatchString(id) {
			continue
		}
		sn, err := cloud.FindSubnet(ctx, e.Clients.EC2, id)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			problems = append(problems, Problem{Path: at, Summary: "Subnet not found", Detail: fmt.Sprintf("%s does not exist in %s: %s.", id, e.Region(), fix)})
			continue
		case err != nil:
			return nil, nil, nil, err
		}
		found[i] = &sn
		refs = append(refs, residency.Ref{Path: at, Kind: residency.KindZoneID, Value: sn.ZoneID})
	}
	return found, refs, problems, nil
}

// checkServingNetwork checks vpc_config against EC2 (the values known):
// each subnet exists in the region, and its zone is a residency reference
// (the GPU cluster's and CPU footprint's rule: lookupSubnets); the subnets
// are of one VPC; each security group exists and is of that VPC.
func (e *Env) checkServingNetwork(ctx context.Context, s ServingEndpointSpec, unknown []string) ([]Problem, []residency.Ref, error) {
	o := unknownPaths(unknown)
	c := s.VPC
	if c == nil {
		return nil, nil, nil
	}
	found, refs, problems, err := e.lookupSubnets(ctx, ServingSubnetsPath, c.SubnetIDs, func(p string) bool { return o.known(p) },
		"set vpc_config.subnet_ids to subnets of this region")
	if err != nil {
		return nil, nil, fmt.Errorf("checking the subnets of endpoint %s: %w", s.Name, err)
	}
	vpc, first := "", -1
	for i, sn := range found {
		switch {
		case sn == nil:
		case vpc == "":
			vpc, first = sn.VPCID, i
		case sn.VPCID != vpc:
			problems = append(problems, Problem{Path: fmt.Sprintf("%s[%d]", ServingSubnetsPath, i), Summary: "Subnets in different VPCs",
				Detail: fmt.Sprintf("%s is in %s, but %s[%d] (%s) is in %s: SageMaker puts an endpoint's interfaces in one VPC; choose subnets of one VPC.",
					c.SubnetIDs[i], sn.VPCID, ServingSubnetsPath, first, c.SubnetIDs[first], vpc)})
		}
	}
	for i, id := range c.SecurityGroupIDs {
		at := fmt.Sprintf("%s[%d]", ServingSecurityGroupsPath, i)
		if !o.known(at) || !securityGroupIDRE().MatchString(id) {
			continue
		}
		g, err := cloud.FindSecurityGroup(ctx, e.Clients.EC2, id)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			problems = append(problems, Problem{Path: at, Summary: "Security group not found", Detail: fmt.Sprintf("%s does not exist in %s: set vpc_config.security_group_ids to security groups of the subnets' VPC.", id, e.Region())})
		case err != nil:
			return nil, nil, fmt.Errorf("checking the security groups of endpoint %s: %w", s.Name, err)
		case vpc != "" && g.VPCID != vpc:
			problems = append(problems, Problem{Path: at, Summary: "Security group in another VPC",
				Detail: fmt.Sprintf("%s is of %s, but the subnets are in %s: SageMaker takes security groups of the subnets' VPC only; choose one of %s.", id, g.VPCID, vpc, vpc)})
		}
	}
	return problems, refs, nil
}

// servingVPCEqual compares two VPC configurations as sets: the order of the
// ids means nothing to SageMaker.
func servingVPCEqual(a, b *ServingVPC) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return sameSet(a.SubnetIDs, b.SubnetIDs) && sameSet(a.SecurityGroupIDs, b.SecurityGroupIDs)
}

func sameSet(a, b []string) bool {
	x, y := slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// readBackServingVPC is what exists in the declared shape: the declared
// order when the ids are the same.
func readBackServingVPC(found, declared *ServingVPC) *ServingVPC {
	if found == nil {
		return nil
	}
	out := &ServingVPC{SubnetIDs: slices.Clone(found.SubnetIDs), SecurityGroupIDs: slices.Clone(found.SecurityGroupIDs)}
	if declared != nil {
		if sameSet(found.SubnetIDs, declared.SubnetIDs) && len(found.SubnetIDs) == len(declared.SubnetIDs) {
			out.SubnetIDs = slices.Clone(declared.SubnetIDs)
		}
		if sameSet(found.SecurityGroupIDs, declared.SecurityGroupIDs) && len(found.SecurityGroupIDs) == len(declared.SecurityGroupIDs) {
			out.SecurityGroupIDs = slices.Clone(declared.SecurityGroupIDs)
		}
	}
	return out
}

// readBackNetworkIsolation is network isolation as it exists, in the
// declared shape: unset where it was not declared and is the default.
func readBackNetworkIsolation(found *bool, declared ServingEndpointSpec) *bool {
	if found == nil {
		return declared.NetworkIsolation
	}
	if declared.NetworkIsolation == nil && *found == ServingNetworkIsolationDefault(declared.Variants) {
		return nil
	}
	v := *found
	return &v
}
