package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// compliantZone picks where a GPU cluster goes when nothing in its spec
// names a zone: the first zone the residency policy allows (region allowed,
// zone id not excluded) that offers the type and, when vpc_id is known and
// set, holds a subnet of that VPC. When there is none, the problem names
// every zone of the region it considered and why each was refused, so that
// plan fails before anything is written. offered are the zone ids offering
// the type; zones maps the region's zone ids to names.
func (e *Env) compliantZone(ctx context.Context, spec GPUClusterSpec, offered []string, zones map[string]string, allowed func(string) bool) (zoneID, subnetID string, problem *Problem, err error) {
	if len(offered) == 0 {
		return "", "", nil, nil // the type check says the type is not offered at all
	}
	vpc := ""
	if spec.Known("vpc_id") {
		vpc = spec.VPCID
	}
	considered := map[string]string{}
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		considered[z] = "does not offer " + spec.InstanceType
	}
	for _, z := range offered {
		r, perr := residency.ParseZoneID(z)
		switch {
		case perr != nil || !e.Policy.RegionAllowed(r):
			considered[z] = "outside the allowed regions"
			continue
		case !allowed(z):
			considered[z] = "excluded by residency.excluded_zone_ids"
			continue
		case vpc == "":
			return z, "", nil, nil
		}
		sn, ferr := cloud.FindSubnetInZone(ctx, e.Clients.EC2, z, vpc)
		switch {
		case errors.Is(ferr, cloud.ErrNotFound):
			considered[z] = fmt.Sprintf("offers %s, but %s has no subnet there", spec.InstanceType, vpc)
		case ferr != nil:
			return "", "", nil, ferr
		default:
			return z, sn.ID, nil, nil
		}
	}
	var lines []string
	for _, z := range slices.Sorted(maps.Keys(considered)) {
		lines = append(lines, fmt.Sprintf("%s: %s", z, considered[z]))
	}
	what := fmt.Sprintf("no zone the residency policy allows offers %s", spec.InstanceType)
	path := "instance_type"
	if vpc != "" {
		what += fmt.Sprintf(" with a subnet of %s", vpc)
		path = "vpc_id"
	}
	return "", "", &Problem{Path: path, Summary: "No compliant zone", Detail: fmt.Sprintf(
		"%s, so the cluster has nowhere to go. Zones considered: %s. Fix: choose an instance type offered in an allowed zone, create a subnet there, or review residency.excluded_zone_ids.",
		what, strings.Join(lines, "; "))}, nil
}

// Zone is an availability zone: its id (stable across accounts) and name.
type Zone struct {
	ID   string
	Name string
}

// AllowedZones lists the zones of the environment's region that the
// residency policy allows and that are available, sorted by id: where
// resources of other providers may go.
func (e *Env) AllowedZones(ctx context.Context) ([]Zone, error) {
	zones, err := e.Zones(ctx)
	if err != nil {
		return nil, err
	}
	var out []Zone
	for _, z := range zones {
		if z.State != "" && z.State != "available" {
			continue
		}
		if !e.Policy.ZoneIDAllowed(z.ID) {
			continue
		}
		out = append(out, Zone{ID: z.ID, Name: z.Name})
	}
	return out, nil
}
