package platform

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// CPU footprint capacity types.
const (
	CapacityOnDemandOnly = "on_demand"
	CapacitySpotMixed    = "spot"
)

// CPUFootprintCapacityTypes are the values of capacity_type.
func CPUFootprintCapacityTypes() []string {
	return []string{CapacityOnDemandOnly, CapacitySpotMixed}
}

// CPUArchitectures are the values of requirements.architecture.
func CPUArchitectures() []string { return []string{"x86_64", "arm64", "any"} }

// CPUFeatureNames are the ISA features requirements.cpu_features accepts:
// /proc/cpuinfo flag names the catalog records and hwprobe verifies.
func CPUFeatureNames() []string {
	return []string{
		"sse4_2", "avx", "avx2", "fma", "f16c",
		"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
		"amx_tile", "amx_bf16", "amx_int8",
		"asimd", "sve", "sve2", "bf16", "i8mm", "svebf16",
	}
}

// CPURequirements are what the workload needs; the provider picks the
// cheapest offered type meeting them, unless InstanceType is set.
type CPURequirements struct {
	MinVCPUs       int
	MinMemoryGiB   float64
	CPUFeatures    []string
	Architecture   string // x86_64, arm64, any ("" is any)
	Burstable      bool
	MaxHourlyPrice float64 // USD; 0 is no limit
}

// CPUFootprintSpec is the declared CPU footprint, as both front ends
// translate it.
type CPUFootprintSpec struct {
	Name         string
	Requirements CPURequirements
	// InstanceType, when set, is used as given (still checked against the
	// requirements and the jurisdiction's offerings).
	InstanceType string
	CapacityType string // on_demand or spot
	// OnDemandBase is how many instances stay On-Demand under spot.
	OnDemandBase int
	Size         GroupSize
	Schedules    []Schedule
	Tags         map[string]string

	// SubnetIDs are where instances go; empty: the default subnet of every
	// allowed zone that offers the chosen type.
	SubnetIDs []string
	// Image is an AMI id (ami-...) or an SSM parameter name that holds one;
	// empty: DefaultFootprintImage of the chosen type's architecture.
	Image            string
	SecurityGroupIDs []string
	InstanceProfile  string // name or ARN
	KMSKeyARN        string // encrypts every volume; empty: the account's default EBS key
	RootVolume       Volume
	DataVolumes      []Volume
	UserData         string
	// MetadataHopLimit is the instances' IMDS PUT response hop limit, as
	// GPUClusterSpec.MetadataHopLimit.
	MetadataHopLimit int
	// MinHealthyPercentage is the share of the group kept in service while
	// an instance refresh rolls it (a change of type, image, volumes, user
	// data, ...); 0 means DefaultMinHealthyPercentage.
	MinHealthyPercentage int
	// Validation is the validation gate; nil means none. With it every
	// instance, at apply and whenever the group launches one later, runs
	// hwprobe against the chosen type's profile and waits in its launch
	// lifecycle hook until it passed.
	Validation *ValidationSpec
	// Slurm is orchestrator.slurm: the instances join a Slurm cluster
	// (named PREFIX-INSTANCEID); nil means they join none.
	Slurm *SlurmSpec
	// EKS is orchestrator.eks: the instances join an EKS cluster; nil
	// means they join none.
	EKS *EKSSpec
	// Kube is orchestrator.kubernetes: the instances join a self-managed
	// Kubernetes cluster (kubeadm); nil means they join none.
	Kube *KubeSpec

	// CreationToken is the owner's token the front end recorded; empty for
	// a create, which makes one.
	CreationToken string

	// Unknown lists the attribute paths whose values are known only at
	// apply; checks that need them wait. A tag whose value is unknown is
	// listed as tags["key"] and has "" in Tags.
	Unknown []string
	// InputProblems are what the front end's translation found (numbers out
	// of range before they were narrowed: see VolumeFromInput).
	InputProblems []Problem
}

// DefaultFootprintImage is the image of a footprint that names none: the
// latest Amazon Linux 2023 of the architecture, by its public SSM parameter.
func DefaultFootprintImage(architecture string) string {
	if architecture == "arm64" {
		return "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64"
	}
	return "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
}

// DefaultMinHealthyPercentage is the share of a footprint kept in service
// during an instance refresh when none is set.
const DefaultMinHealthyPercentage = 90

// MaxSpotInstanceTypes bounds the types a spot footprint's mixed instances
// policy draws on: the cheapest qualifying ones.
const MaxSpotInstanceTypes = 5

// MaxFootprintTags is EC2's 50 tags per resource less the system tags a
// footprint's launch template carries.
const MaxFootprintTags = 50 - 5

// Known reports whether the value at path is known.
func (s *CPUFootprintSpec) Known(path string) bool { return s.known(path) }

func (s *CPUFootprintSpec) unknownTagKeys() []string {
	g := GPUClusterSpec{Unknown: s.Unknown}
	return g.unknownTagKeys()
}

// capacityType is the capacity type with its default.
func (s *CPUFootprintSpec) capacityType() string {
	if s.CapacityType == "" {
		return CapacityOnDemandOnly
	}
	return s.CapacityType
}

func (s *CPUFootprintSpec) minHealthy() int32 {
	if s.MinHealthyPercentage == 0 {
		return DefaultMinHealthyPercentage
	}
	return int32(s.MinHealthyPercentage)
}

func (s *CPUFootprintSpec) known(path string) bool { return !slices.Contains(s.Unknown, path) }

var footprintNameRE = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

// MaxFootprintSize is the largest max_size a footprint accepts: a small or
// medium business's CPU fleet, not a GPU farm.
const MaxFootprintSize = 100

// ValidateCPUFootprint checks what needs no catalog and no AWS call.
// Values at the paths in unknown (the spec's Unknown) are not known yet and
// are skipped.
func ValidateCPUFootprint(spec CPUFootprintSpec, unknown []string) []Problem {
	s := &spec
	s.Unknown = unknown
	ps := slices.Clone(s.InputProblems)
	add := func(path, summary, format string, args ...any) {
		ps = append(ps, Problem{Path: path, Summary: summary, Detail: fmt.Sprintf(format, args...)})
	}
	ps = append(ps, s.validateLaunch()...)
	ps = append(ps, s.validationProblems()...)
	if s.Slurm != nil {
		ps = append(ps, s.Slurm.validate(s.known, s.Validation != nil)...)
	}
	if s.EKS != nil {
		ps = append(ps, s.EKS.validate(s.known, s.Validation != nil, s.Slurm != nil)...)
	}
	if s.Kube != nil {
		ps = append(ps, s.Kube.validate(s.known, s.Validation != nil, s.Slurm != nil || s.EKS != nil)...)
	}
	if s.known("name") && !footprintNameRE().MatchString(s.Name) {
		add("name", "Invalid name", "%q: use 1-100 letters, digits, '.', '-' or '_', starting with a letter or digit.", s.Name)
	}
	r := s.Requirements
	if s.known("requirements.min_vcpus") && r.MinVCPUs < 0 {
		add("requirements.min_vcpus", "Value out of range", "must be 0 or more, got %d.", r.MinVCPUs)
	}
	if s.known("requirements.min_memory_gib") && r.MinMemoryGiB < 0 {
		add("requirements.min_memory_gib", "Value out of range", "must be 0 or more, got %g.", r.MinMemoryGiB)
	}
	if s.known("requirements.max_hourly_price") && r.MaxHourlyPrice < 0 {
		add("requirements.max_hourly_price", "Value out of range", "must be 0 (no limit) or more, got %g.", r.MaxHourlyPrice)
	}
	if s.known("requirements.architecture") && r.Architecture != "" && !slices.Contains(CPUArchitectures(), r.Architecture) {
		add("requirements.architecture", "Invalid architecture", "%q: use one of %s.", r.Architecture, strings.Join(CPUArchitectures(), ", "))
	}
	if s.known("requirements.cpu_features") {
		for i, f := range r.CPUFeatures {
			if !slices.Contains(CPUFeatureNames(), strings.ToLower(f)) {
				add(fmt.Sprintf("requirements.cpu_features[%d]", i), "Unknown CPU feature", "%q: use /proc/cpuinfo flag names: %s.", f, strings.Join(CPUFeatureNames(), ", "))
			}
		}
	}
	if s.known("capacity_type") && s.CapacityType != "" && !slices.Contains(CPUFootprintCapacityTypes(), s.CapacityType) {
		add("capacity_type", "Invalid capacity type", "%q: use one of %s.", s.CapacityType, strings.Join(CPUFootprintCapacityTypes(), ", "))
	}
	if s.known("on_demand_base") && s.OnDemandBase < 0 {
		add("on_demand_base", "Value out of range", "must be 0 or more, got %d.", s.OnDemandBase)
	}
	if s.known("on_demand_base") && s.known("capacity_type") && s.OnDemandBase > 0 && s.CapacityType != CapacitySpotMixed {
		add("on_demand_base", "Invalid combination", "on_demand_base applies to capacity_type = %q only.", CapacitySpotMixed)
	}
	if s.known("min_size") && s.known("max_size") && s.known("desired_capacity") {
		z := s.Size
		switch {
		case z.Min < 0:
			add("min_size", "Value out of range", "must be 0 or more, got %d.", z.Min)
		case z.Max > MaxFootprintSize:
			add("max_size", "Value out of range", "at most %d, got %d.", MaxFootprintSize, z.Max)
		case z.Min > z.Max:
			add("min_size", "Invalid sizes", "min_size %d is above max_size %d.", z.Min, z.Max)
		case z.Desired < z.Min || z.Desired > z.Max:
			add("desired_capacity", "Invalid sizes", "%d is outside min_size %d and max_size %d.", z.Desired, z.Min, z.Max)
		}
		if s.known("schedule") {
			ps = append(ps, ScheduleProblems("schedule", z, s.Schedules)...)
		}
	}
	return ps
}

// CPUDecision is the instance type the footprint runs, why, and what it
// costs: what the plan shows.
type CPUDecision struct {
	InstanceType string
	Architecture string // of the chosen type: x86_64 or arm64
	Reason       string
	// Candidates are the qualifying types, cheapest first: the mixed
	// instances policy of a spot footprint draws on them in this order.
	Candidates  []string
	Rejected    []string // cheaper types rejected, "name: what it missed"
	HourlyUSD   float64
	PriceKnown  bool
	Estimate    bool
	PriceSource string
	// ZoneIDs are the allowed zones that offer the type.
	ZoneIDs []string
	// MonthlyAtDesired is the On-Demand cost of desired_capacity instances
	// running all month; MonthlyScheduled applies the schedules. Both are 0
	// when the price is unknown.
	MonthlyAtDesired   float64
	MonthlyScheduled   float64
	AverageInstances   float64
	ScheduledActions   []ScheduledAction
	CostAssumptionNote string
}

// Decide chooses the footprint's instance type from the catalog among the
// allowed zones and estimates its monthly cost. It needs known requirements,
// instance type, sizes and schedules; a caller with unknown ones decides at
// apply.
func (s *CPUFootprintSpec) Decide(cat *catalog.Catalog, allowedZoneIDs []string) (CPUDecision, error) {
	req := catalog.Requirements{
		MinVCPUs: s.Requirements.MinVCPUs, MinMemoryGiB: s.Requirements.MinMemoryGiB,
		CPUFeatures: s.Requirements.CPUFeatures, Architecture: s.Requirements.Architecture,
		Burstable: s.Requirements.Burstable, MaxHourlyUSD: s.Requirements.MaxHourlyPrice,
	}
	var d CPUDecision
	var chosen catalog.Candidate
	region := cat.Region()
	if region == "" && len(allowedZoneIDs) > 0 {
		region, _ = residency.ParseZoneID(allowedZoneIDs[0])
	}
	if s.InstanceType != "" {
		cand, ok := catalog.Evaluate(cat, s.InstanceType, req, allowedZoneIDs)
		switch {
		case !ok:
			return d, problem(Problem{Path: "instance_type", Summary: "Unknown instance type", Detail: fmt.Sprintf("%q is not in the catalog of %s.", s.InstanceType, region)})
		case len(cand.ZoneIDs) == 0:
			return d, problem(Problem{Path: "instance_type", Summary: "Instance type not offered", Detail: fmt.Sprintf("%s is not offered in any allowed zone of %s (%s).", s.InstanceType, region, strings.Join(allowedZoneIDs, ", "))})
		case !cand.Qualifies():
			return d, problem(Problem{Path: "instance_type", Summary: "Instance type does not meet the requirements", Detail: fmt.Sprintf("%s: %s.", s.InstanceType, strings.Join(cand.Missed, "; "))})
		}
		chosen = cand
		d.Reason = fmt.Sprintf("%s is set explicitly", s.InstanceType)
		d.Candidates = []string{s.InstanceType}
	} else {
		sel, err := catalog.Select(cat, req, allowedZoneIDs)
		var nm *catalog.NoMatchError
		if errors.As(err, &nm) {
			return d, problem(Problem{Path: "requirements", Summary: "No instance type meets the requirements", Detail: err.Error()})
		}
		if err != nil {
			return d, err
		}
		chosen = sel.Chosen
		d.Reason = sel.Reason
		for _, q := range sel.Qualifying {
			d.Candidates = append(d.Candidates, q.Name)
		}
		for _, r := range sel.RejectedCheaper {
			d.Rejected = append(d.Rejected, r.Name+": "+strings.Join(r.Missed, "; "))
		}
	}
	d.InstanceType, d.Architecture = chosen.Name, chosen.Architecture
	d.HourlyUSD, d.PriceKnown, d.Estimate, d.PriceSource = chosen.USDPerHour, chosen.PriceKnown, chosen.Estimate, chosen.PriceSource
	d.ZoneIDs = chosen.ZoneIDs
	acts, err := ScheduledActions(s.Size, s.Schedules)
	if err != nil {
		return d, err
	}
	d.ScheduledActions = acts
	if d.AverageInstances, err = AverageInstances(s.Size, acts); err != nil {
		return d, err
	}
	if d.PriceKnown {
		d.MonthlyAtDesired = d.HourlyUSD * float64(s.Size.Desired) * HoursPerMonth
		d.MonthlyScheduled = d.HourlyUSD * d.AverageInstances * HoursPerMonth
	}
	d.CostAssumptionNote = costNote(d, s.CapacityType)
	return d, nil
}

// Shown gives the decision's hourly price and monthly costs as both front
// ends display them: rounded to four decimals, so a plan shows the same
// figure whichever front end made it.
func (d CPUDecision) Shown() (hourly, monthly, scheduled float64) {
	r := func(f float64) float64 { return math.Round(f*10000) / 10000 }
	return r(d.HourlyUSD), r(d.MonthlyAtDesired), r(d.MonthlyScheduled)
}

func costNote(d CPUDecision, capacityType string) string {
	if !d.PriceKnown {
		return fmt.Sprintf("price of %s unknown: no cost estimate", d.InstanceType)
	}
	n := fmt.Sprintf("On-Demand $%.4f/h (%s), %.0f h a month", d.HourlyUSD, d.PriceSource, HoursPerMonth)
	if d.Estimate {
		n += "; an estimate, not a quote for this region"
	}
	if capacityType == CapacitySpotMixed {
		n += "; spot instances usually cost less than this On-Demand figure"
	}
	return n
}

// validateLaunch checks what the launch template takes: image, security
// groups, instance profile, volumes, user data, as the GPU cluster checks
// them (same paths, same words), and the refresh's healthy percentage.
func (s *CPUFootprintSpec) validateLaunch() []Problem {
	g := GPUClusterSpec{Image: s.Image, SecurityGroupIDs: s.SecurityGroupIDs, InstanceProfile: s.InstanceProfile,
		RootVolume: s.RootVolume, DataVolumes: s.DataVolumes, MetadataHopLimit: s.MetadataHopLimit, Unknown: s.Unknown}
	if s.Image == "" {
		g.Unknown = append(slices.Clone(g.Unknown), "image") // optional: DefaultFootprintImage
	}
	ps := g.validateInputs()
	add := func(path, summary, detail string) {
		ps = append(ps, Problem{Path: path, Summary: summary, Detail: detail})
	}
	devices := map[string]bool{}
	for i, v := range append([]Volume{s.RootVolume}, s.DataVolumes...) {
		path := "root_volume"
		if i > 0 {
			path = fmt.Sprintf("data_volumes[%d]", i-1)
			dev := cmp.Or(v.DeviceName, cloud.DataVolumeDevice(i-1))
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
	if s.known("user_data") && len(s.UserData) > 16*1024 {
		add("user_data", "User data too large", fmt.Sprintf("user_data is %d bytes; EC2 accepts 16 KiB. Fetch the rest from S3 at boot.", len(s.UserData)))
	}
	if s.known("min_healthy_percentage") && (s.MinHealthyPercentage < 0 || s.MinHealthyPercentage > 100) {
		add("min_healthy_percentage", "Value out of range", fmt.Sprintf("min_healthy_percentage = %d: use 0 to 100 (percent of the group kept in service while instances roll).", s.MinHealthyPercentage))
	}
	if s.known("subnet_ids") {
		for i, sn := range s.SubnetIDs {
			if !subnetIDRE().MatchString(sn) {
				add(fmt.Sprintf("subnet_ids[%d]", i), "Invalid subnet id", fmt.Sprintf("%q: a subnet id looks like subnet-0123456789abcdef0.", sn))
			}
		}
	}
	return ps
}

var subnetIDRE = lazyRegexp(`^subnet-[0-9a-f]{8,17}$`)

func problem(p Problem) error { return &RefusedError{Problems: []Problem{p}} }
