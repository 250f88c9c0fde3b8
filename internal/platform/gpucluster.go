package platform

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// MaxGPUClusterNodes bounds node_count: beyond it a cluster placement group
// is unlikely to be placed at all, and a typo (4000 for 40) is expensive.
const MaxGPUClusterNodes = 512

// Rollout strategies: how nodes whose launch configuration changed
// (instance type, image, volumes, user data, ...) are replaced.
const (
	// RolloutTerminateFirst terminates a batch of stale nodes, then launches
	// their replacements into the same indices. It needs no spare capacity:
	// the right choice on a capacity reservation or block. Default.
	RolloutTerminateFirst = "terminate_first"
	// RolloutLaunchFirst launches a batch of replacements, waits until they
	// run, then terminates the nodes they replace. It keeps node_count nodes
	// up throughout but needs capacity for a batch more.
	RolloutLaunchFirst = "launch_first"
)

// RolloutStrategies lists the rollout strategies, default first.
func RolloutStrategies() []string { return []string{RolloutTerminateFirst, RolloutLaunchFirst} }

// Rollout is how a GPU cluster replaces stale nodes.
type Rollout struct {
	Strategy  string // RolloutTerminateFirst (default) or RolloutLaunchFirst
	BatchSize int    // nodes replaced at a time; 0 means 1
}

// CapacityRetry is how launches retry capacity errors before falling back to
// another zone or failing.
type CapacityRetry struct {
	Attempts     int           // RunInstances attempts per zone; 0 means 4
	InitialDelay time.Duration // first wait, doubling up to a minute; 0 means 10s
}

// GPUClusterSpec is a GPU training cluster as declared: both front ends
// translate their schema to it. A cluster is identified by Name.
type GPUClusterSpec struct {
	Name         string
	InstanceType string
	NodeCount    int
	// Zone (name) or ZoneID places the cluster; when both are empty the
	// subnet's zone is used, else the first allowed zone offering the type.
	Zone         string
	ZoneID       string
	ZoneFallback bool // on capacity errors, try the other allowed zones
	SubnetID     string
	VPCID        string // pick a subnet of this VPC in the zone (with zone fallback)
	// SecurityGroupIDs go on every network interface.
	SecurityGroupIDs []string
	InstanceProfile  string // name or ARN
	// Image is an AMI id (ami-...) or an SSM parameter name that holds one.
	Image string
	// PlacementGroup names an existing cluster placement group; empty means
	// the cluster creates and owns mlplatform-NAME.
	PlacementGroup string
	// EFAInterfaces per node: nil means as many as the type supports, 0 none.
	EFAInterfaces *int
	Capacity      Capacity
	KMSKeyARN     string
	RootVolume    Volume
	DataVolumes   []Volume
	UserData      string
	// MetadataHopLimit is the nodes' IMDS PUT response hop limit, 1 to
	// MaxMetadataHopLimit; 0 in a desired spec means DefaultMetadataHopLimit,
	// in a record one made before the setting existed (its nodes run with
	// LegacyMetadataHopLimit).
	MetadataHopLimit int
	Tags             map[string]string
	Rollout          Rollout
	CapacityRetry    CapacityRetry
	// Validation is the validation gate; nil means none (the nodes are not
	// validated and apply does not wait for reports).
	Validation *ValidationSpec
	// Slurm is orchestrator.slurm: the nodes join a Slurm cluster; nil
	// means they join none.
	Slurm *SlurmSpec
	// EKS is orchestrator.eks: the nodes join an EKS cluster; nil means
	// they join none.
	EKS *EKSSpec
	// Kube is orchestrator.kubernetes: the nodes join a self-managed
	// Kubernetes cluster (kubeadm); nil means they join none.
	Kube *KubeSpec

	// CreationToken is the owner's token the front end recorded (Terraform
	// state, Pulumi outputs); empty for a create, which makes one.
	CreationToken string

	// Unknown lists the attribute paths whose values are not known yet (a
	// plan before apply): their checks wait for apply. A tag whose value is
	// unknown is listed as tags["key"] and has "" in Tags.
	Unknown []string
	// InputProblems are what the front end's translation found (values out
	// of range before they were narrowed: see VolumeFromInput).
	InputProblems []Problem
}

// Known reports whether the value at path is known.
func (s *GPUClusterSpec) Known(path string) bool { return !slices.Contains(s.Unknown, path) }

// Problem is one plan-time error (or warning) of a spec, on the attribute it
// concerns, saying what is wrong and how to fix it.
type Problem struct {
	Path    string
	Summary string
	Detail  string
	Warning bool
}

// String is the problem on one line: its path, summary (when it has one)
// and detail.
func (p Problem) String() string {
	if p.Summary == "" {
		return p.Path + ": " + p.Detail
	}
	return p.Path + ": " + p.Summary + ": " + p.Detail
}

var clusterNameRE = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
var reservationIDRE = lazyRegexp(`^cr-[0-9a-f]{8,17}$`)

// ValidateGPUCluster checks what needs no AWS call: the name, the count,
// the capacity, rollout and volume settings, the formats and ranges of the
// inputs, and their coherence. Values at the paths in unknown (the spec's
// Unknown) are not known yet and are skipped. Every front end reports these
// problems on the same paths, in the same words (planGPUCluster includes
// them).
func ValidateGPUCluster(spec GPUClusterSpec, unknown []string) []Problem {
	s := &spec
	s.Unknown = unknown
	ps := slices.Clone(s.InputProblems)
	add := func(path, summary, detail string) {
		ps = append(ps, Problem{Path: path, Summary: summary, Detail: detail})
	}
	ps = append(ps, s.validateInputs()...)
	if s.Slurm != nil {
		ps = append(ps, s.Slurm.validate(s.Known, s.Validation != nil)...)
	}
	if s.EKS != nil {
		ps = append(ps, s.EKS.validate(s.Known, s.Validation != nil, s.Slurm != nil)...)
	}
	if s.Kube != nil {
		ps = append(ps, s.Kube.validate(s.Known, s.Validation != nil, s.Slurm != nil || s.EKS != nil)...)
	}
	if s.Known("name") && !clusterNameRE().MatchString(s.Name) {
		add("name", "Invalid cluster name", fmt.Sprintf("%q: use 1 to 100 letters, digits, '-', '_' or '.', starting with a letter or digit. It names the launch template (mlplatform-NAME) and tags every node.", s.Name))
	}
	if s.Known("node_count") && (s.NodeCount < 1 || s.NodeCount > MaxGPUClusterNodes) {
		add("node_count", "node_count out of range", fmt.Sprintf("node_count = %d: a GPU cluster has 1 to %d nodes. Split a larger fleet into several clusters.", s.NodeCount, MaxGPUClusterNodes))
	}
	c := s.Capacity
	typ := c.Type
	if typ == "" {
		typ = cloud.CapacityOnDemand
	}
	if s.Known("capacity.type") && !slices.Contains(cloud.CapacityTypes(), typ) {
		add("capacity.type", "Unknown capacity type", fmt.Sprintf("%q: use one of %s.", c.Type, strings.Join(cloud.CapacityTypes(), ", ")))
	}
	needsRes := typ == cloud.CapacityCapacityReservation || typ == cloud.CapacityCapacityBlock
	if s.Known("capacity.reservation_id") {
		switch {
		case needsRes && c.ReservationID == "":
			add("capacity.reservation_id", "Missing capacity reservation", fmt.Sprintf("capacity.type = %q launches into a reservation: set capacity.reservation_id to its id (cr-...).", typ))
		case !needsRes && c.ReservationID != "":
			add("capacity.reservation_id", "Capacity reservation not used", fmt.Sprintf("capacity.type = %q does not launch into a reservation: remove capacity.reservation_id, or set capacity.type to capacity_reservation or capacity_block.", typ))
		case c.ReservationID != "" && !reservationIDRE().MatchString(c.ReservationID):
			add("capacity.reservation_id", "Invalid capacity reservation id", fmt.Sprintf("%q: a capacity reservation or capacity block id looks like cr-0123456789abcdef0.", c.ReservationID))
		}
	}
	if c.SpotMaxPrice != "" && typ != cloud.CapacitySpot && s.Known("capacity.spot_max_price") {
		add("capacity.spot_max_price", "Spot price without spot capacity", "capacity.spot_max_price applies to capacity.type = \"spot\" only: remove it or use spot.")
	}
	if s.ZoneFallback && s.Known("zone_fallback") {
		switch {
		case needsRes:
			add("zone_fallback", "Zone fallback with a reservation", fmt.Sprintf("A %s lives in one zone, so nodes cannot fall back to another: set zone_fallback = false.", strings.ReplaceAll(typ, "_", " ")))
		case s.SubnetID != "":
			add("zone_fallback", "Zone fallback with a fixed subnet", "subnet_id pins the cluster to the subnet's zone: remove subnet_id (the default subnet of each zone is used), or set vpc_id to pick a subnet of that VPC in each zone, or set zone_fallback = false.")
		}
	}
	if s.SubnetID != "" && s.VPCID != "" && s.Known("subnet_id") && s.Known("vpc_id") {
		add("vpc_id", "Both subnet_id and vpc_id", "subnet_id already names the subnet (and so its VPC): remove vpc_id, or remove subnet_id to pick a subnet of vpc_id in the zone.")
	}
	if s.Known("rollout.strategy") && s.Rollout.Strategy != "" && !slices.Contains(RolloutStrategies(), s.Rollout.Strategy) {
		add("rollout.strategy", "Unknown rollout strategy", fmt.Sprintf("%q: use %s.", s.Rollout.Strategy, strings.Join(RolloutStrategies(), " or ")))
	}
	if s.Rollout.BatchSize < 0 {
		add("rollout.batch_size", "Invalid batch size", "rollout.batch_size is the number of nodes replaced at a time: 1 or more.")
	}
	if s.EFAInterfaces != nil && (*s.EFAInterfaces < 0 || *s.EFAInterfaces > 32) {
		add("efa_interfaces", "Invalid EFA interface count", fmt.Sprintf("efa_interfaces = %d: use 0 (no EFA) to 32, or leave it unset for as many as the instance type supports.", *s.EFAInterfaces))
	}
	devices := map[string]bool{}
	for i, v := range append([]Volume{s.RootVolume}, s.DataVolumes...) {
		path := "root_volume"
		if i > 0 {
			path = fmt.Sprintf("data_volumes[%d]", i-1)
			dev := v.DeviceName
			if dev == "" {
				dev = cloud.DataVolumeDevice(i - 1)
			}
			if devices[dev] {
				add(path+".device_name", "Duplicate device name", fmt.Sprintf("%s is used by two data volumes: give each its own device_name.", dev))
			}
			devices[dev] = true
			if v.SizeGiB < 1 {
				add(path+".size_gib", "Missing volume size", "A data volume needs size_gib of 1 or more.")
			}
		}
		switch v.Type {
		case "", "gp3", "gp2", "io1", "io2", "st1", "sc1":
		default:
			add(path+".type", "Unknown volume type", fmt.Sprintf("%q: use gp3, gp2, io1, io2, st1 or sc1.", v.Type))
		}
		if v.Throughput > 0 && v.Type != "" && v.Type != "gp3" {
			add(path+".throughput", "Throughput needs gp3", "throughput is set on gp3 volumes only.")
		}
	}
	if s.Validation != nil {
		ps = append(ps, s.Validation.Validate("validation", s.Known)...)
	}
	if s.Known("user_data") && len(s.UserData) > 16*1024 {
		add("user_data", "User data too large", fmt.Sprintf("user_data is %d bytes; EC2 accepts 16 KiB. Fetch the rest from S3 at boot.", len(s.UserData)))
	}
	return ps
}

// GPUTypeInfo is what the cluster checks need to know of an instance type.
type GPUTypeInfo struct {
	Name             string
	GPUs             int
	GPUModel         string
	EFASupported     bool
	MaxEFAInterfaces int
	// PlacementStrategies the type supports; nil when not known (assume all).
	PlacementStrategies []string
}

// GPUTypeCatalog answers the cluster's questions about instance types in
// the environment's region. The instance catalog implements it; tests use a
// table.
type GPUTypeCatalog interface {
	// TypeInfo describes a type EC2 knows; false for an unknown name.
	TypeInfo(name string) (GPUTypeInfo, bool)
	// OfferedZoneIDs lists the zone ids of the region that offer the type,
	// sorted; none when the region does not offer it.
	OfferedZoneIDs(name string) []string
	// GPUTypesOffered lists the GPU instance types offered in zoneID, or in
	// the region when zoneID is empty, sorted.
	GPUTypesOffered(zoneID string) []string
}

// checkType checks the instance type, EFA and placement against the
// catalog, in zoneID when it is known (not empty). It returns the type info
// and the EFA interface count to use.
func (s *GPUClusterSpec) checkType(cat GPUTypeCatalog, region, zoneID string, allowedZone func(string) bool) (GPUTypeInfo, int, []Problem) {
	var ps []Problem
	add := func(path, summary, detail string) {
		ps = append(ps, Problem{Path: path, Summary: summary, Detail: detail})
	}
	listOr := func(xs []string, none string) string {
		if len(xs) == 0 {
			return none
		}
		return strings.Join(xs, ", ")
	}
	info, ok := cat.TypeInfo(s.InstanceType)
	offeredZones := cat.OfferedZoneIDs(s.InstanceType)
	if !ok || len(offeredZones) == 0 {
		add("instance_type", "Instance type not offered", fmt.Sprintf("%s is not offered in %s; offered GPU types there: %s. Set instance_type to one of them.",
			s.InstanceType, region, listOr(cat.GPUTypesOffered(""), "none")))
		return info, 0, ps
	}
	if info.GPUs == 0 {
		add("instance_type", "Not a GPU instance type", fmt.Sprintf("%s has no GPU; GPU types offered in %s: %s. For CPU work use mlplatform_cpu_footprint.",
			s.InstanceType, region, listOr(cat.GPUTypesOffered(""), "none")))
	}
	if zoneID != "" && !slices.Contains(offeredZones, zoneID) {
		var allowed []string
		for _, z := range offeredZones {
			if allowedZone(z) {
				allowed = append(allowed, z)
			}
		}
		add(s.zonePath(), "Instance type not offered in zone", fmt.Sprintf("%s is not offered in %s; allowed zones that offer it: %s. GPU types offered in %s: %s.",
			s.InstanceType, zoneID, listOr(allowed, "none"), zoneID, listOr(cat.GPUTypesOffered(zoneID), "none")))
	}
	if info.PlacementStrategies != nil && !slices.Contains(info.PlacementStrategies, "cluster") {
		add("instance_type", "No cluster placement", fmt.Sprintf("%s does not support cluster placement groups; choose a type that does (p5en, p5, p4d, g5, g6 do).", s.InstanceType))
	}
	efa := info.MaxEFAInterfaces
	if !info.EFASupported {
		efa = 0
	}
	if s.EFAInterfaces != nil && s.Known("efa_interfaces") {
		want := *s.EFAInterfaces
		switch {
		case want > 0 && !info.EFASupported:
			add("efa_interfaces", "EFA not supported", fmt.Sprintf("%s does not support EFA: set efa_interfaces = 0, or choose an EFA type such as p5en.48xlarge.", s.InstanceType))
		case want > info.MaxEFAInterfaces && info.EFASupported:
			add("efa_interfaces", "Too many EFA interfaces", fmt.Sprintf("%s supports at most %d EFA interfaces; efa_interfaces = %d. Leave it unset for the maximum.", s.InstanceType, info.MaxEFAInterfaces, want))
		default:
			efa = want
		}
	}
	return info, efa, ps
}

func (s *GPUClusterSpec) zonePath() string {
	switch {
	case s.ZoneID != "":
		return "zone_id"
	case s.Zone != "":
		return "zone"
	case s.SubnetID != "":
		return "subnet_id"
	}
	return "instance_type"
}

// checkReservation checks a capacity reservation or block against the spec.
func (s *GPUClusterSpec) checkReservation(r cloud.CapacityReservation, zoneID string) []Problem {
	var ps []Problem
	add := func(summary, detail string) {
		ps = append(ps, Problem{Path: "capacity.reservation_id", Summary: summary, Detail: detail})
	}
	isBlock := r.Type == "capacity-block"
	switch {
	case s.Capacity.Type == cloud.CapacityCapacityBlock && !isBlock:
		add("Not a capacity block", fmt.Sprintf("%s is an ordinary capacity reservation: set capacity.type = \"capacity_reservation\".", r.ID))
	case s.Capacity.Type == cloud.CapacityCapacityReservation && isBlock:
		add("A capacity block", fmt.Sprintf("%s is a capacity block (capacity-block market): set capacity.type = \"capacity_block\".", r.ID))
	}
	if r.InstanceType != "" && s.Known("instance_type") && r.InstanceType != s.InstanceType {
		add("Reservation is for another type", fmt.Sprintf("%s reserves %s, not %s: set instance_type = %q or use a reservation for %s.", r.ID, r.InstanceType, s.InstanceType, r.InstanceType, s.InstanceType))
	}
	if zoneID != "" && r.ZoneID != "" && r.ZoneID != zoneID {
		add("Reservation is in another zone", fmt.Sprintf("%s is in %s, the cluster in %s: set zone_id = %q (or leave the zone unset to follow the reservation).", r.ID, r.ZoneID, zoneID, r.ZoneID))
	}
	switch r.State {
	case "active":
	case "scheduled", "payment-pending", "pending":
		if isBlock {
			ps = append(ps, Problem{Path: "capacity.reservation_id", Warning: true, Summary: "Capacity block not active yet",
				Detail: fmt.Sprintf("%s is %s (starts %s): nodes cannot launch before it starts, so apply will wait for capacity and fail until then.", r.ID, r.State, r.StartDate.Format(time.RFC3339))})
		}
	default:
		add("Reservation not usable", fmt.Sprintf("%s is %s: use an active reservation.", r.ID, r.State))
	}
	if s.Known("node_count") && r.TotalCount > 0 && s.NodeCount > r.TotalCount {
		what := "reservation"
		if isBlock {
			what = "capacity block (a fixed count)"
		}
		add("More nodes than reserved", fmt.Sprintf("node_count = %d but the %s %s holds %d instances: set node_count to at most %d.", s.NodeCount, what, r.ID, r.TotalCount, r.TotalCount))
	}
	return ps
}
