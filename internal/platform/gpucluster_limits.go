package platform

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// Limits of a GPU cluster's inputs, checked at plan by both front ends (the
// Terraform schema's validators use the same constants).
const (
	MinVolumeSizeGiB = 1
	MaxVolumeSizeGiB = 65536
	// MaxVolumeIOPS is io2 Block Express's ceiling; each type has its own
	// range (volumeIOPSRange).
	MaxVolumeIOPS = 256000
	// MinVolumeThroughput and MaxVolumeThroughput bound gp3 throughput (MiB/s).
	MinVolumeThroughput = 125
	MaxVolumeThroughput = 2000
	// MaxGPUClusterDataVolumes: data volumes take /dev/sdf to /dev/sdz.
	MaxGPUClusterDataVolumes = 21
	// MaxTagKeyLength and MaxTagValueLength are EC2's, in characters.
	MaxTagKeyLength   = 128
	MaxTagValueLength = 256
	// MaxGPUClusterTags is EC2's 50 tags per resource less the 6 system tags
	// the launch template carries (the nodes carry 5).
	MaxGPUClusterTags = 50 - 6
	// MaxCapacityRetryDelay bounds capacity_retry.initial_delay.
	MaxCapacityRetryDelay = 10 * time.Minute
	// MinOperationTimeout is the shortest create, update or delete timeout.
	MinOperationTimeout = time.Second
)

var (
	securityGroupIDRE  = lazyRegexp(`^sg-[0-9a-f]{8,17}$`)
	amiIDRE            = lazyRegexp(`^ami-[0-9a-f]{1,17}$`)
	instanceProfileRE  = lazyRegexp(`^[\w+=,.@-]{1,128}$`)
	instanceProfileARN = lazyRegexp(`^arn:aws[a-z-]*:iam::\d{12}:instance-profile/[\w+=,.@/-]{1,128}$`)
	spotPriceRE        = lazyRegexp(`^\d{1,6}(\.\d{1,8})?$`)
)

// VolumeInput is a volume as the user wrote it, before its numbers are
// narrowed to EC2's 32-bit fields.
type VolumeInput struct {
	DeviceName string
	SizeGiB    int64
	Type       string
	IOPS       int64
	Throughput int64
}

// VolumeFromInput narrows v to a Volume. A number out of range is a
// problem on path (e.g. root_volume.iops) and is never silently truncated.
func VolumeFromInput(path string, v VolumeInput) (Volume, []Problem) {
	var ps []Problem
	check := func(attr string, x, lo, hi int64, unit string) int32 {
		if x != 0 && (x < lo || x > hi) {
			ps = append(ps, Problem{Path: path + "." + attr, Summary: "Value out of range",
				Detail: fmt.Sprintf("%s = %d: use %d to %d%s.", attr, x, lo, hi, unit)})
			return 0
		}
		return int32(x)
	}
	out := Volume{DeviceName: v.DeviceName, Type: v.Type}
	out.SizeGiB = check("size_gib", v.SizeGiB, MinVolumeSizeGiB, MaxVolumeSizeGiB, " GiB")
	out.IOPS = check("iops", v.IOPS, 1, MaxVolumeIOPS, "")
	out.Throughput = check("throughput", v.Throughput, MinVolumeThroughput, MaxVolumeThroughput, " MiB/s")
	if v.SizeGiB < 0 {
		ps = append(ps, Problem{Path: path + ".size_gib", Summary: "Value out of range", Detail: fmt.Sprintf("size_gib = %d: use %d to %d GiB.", v.SizeGiB, MinVolumeSizeGiB, MaxVolumeSizeGiB)})
	}
	return out, ps
}

// volumeIOPSRange is the provisioned IOPS range of a volume type; ok is
// false for a type without provisioned IOPS.
func volumeIOPSRange(typ string) (lo, hi int32, ok bool) {
	switch typ {
	case "", "gp3":
		return 3000, 80000, true
	case "io1":
		return 100, 64000, true
	case "io2":
		return 100, MaxVolumeIOPS, true
	}
	return 0, 0, false
}

// TagProblems checks tags as EC2 and the provider take them: keys of 1 to
// 128 characters outside the aws: and mlplatform: namespaces, values up to
// 256 characters, at most max tags. Values listed in unknownKeys are not
// known yet and are checked at apply.
func TagProblems(path string, tags map[string]string, unknownKeys []string, max int) []Problem {
	var ps []Problem
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		p := fmt.Sprintf("%s[%q]", path, k)
		switch {
		case k == "" || utf8.RuneCountInString(k) > MaxTagKeyLength:
			ps = append(ps, Problem{Path: p, Summary: "Invalid tag key", Detail: fmt.Sprintf("tag keys are 1 to %d characters; %q has %d.", MaxTagKeyLength, k, utf8.RuneCountInString(k))})
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			ps = append(ps, Problem{Path: p, Summary: "Reserved tag key", Detail: fmt.Sprintf("%q: the aws: prefix is reserved for AWS. Rename the tag.", k)})
		case strings.HasPrefix(strings.ToLower(k), cloud.ReservedTagPrefix):
			ps = append(ps, Problem{Path: p, Summary: "Reserved tag key", Detail: fmt.Sprintf("%q: the %s prefix is the provider's own (it tells which cluster a node belongs to and who owns it). Rename the tag.", k, cloud.ReservedTagPrefix)})
		}
		if !slices.Contains(unknownKeys, k) && utf8.RuneCountInString(tags[k]) > MaxTagValueLength {
			ps = append(ps, Problem{Path: p, Summary: "Tag value too long", Detail: fmt.Sprintf("tag values are at most %d characters; this one has %d.", MaxTagValueLength, utf8.RuneCountInString(tags[k]))})
		}
	}
	if len(tags) > max {
		ps = append(ps, Problem{Path: path, Summary: "Too many tags", Detail: fmt.Sprintf("%d tags (default_tags included); a GPU cluster takes at most %d (EC2 allows 50 per resource and the provider uses the rest). Remove some.", len(tags), max)})
	}
	return ps
}

// unknownTagKeys lists the tag keys whose values are unknown (tags["k"] in
// Unknown).
func (s *GPUClusterSpec) unknownTagKeys() []string {
	var out []string
	for _, u := range s.Unknown {
		if rest, ok := strings.CutPrefix(u, "tags["); ok {
			if k, err := strconv.Unquote(strings.TrimSuffix(rest, "]")); err == nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// validateInputs checks the formats and ranges of the inputs.
func (s *GPUClusterSpec) validateInputs() []Problem {
	var ps []Problem
	add := func(path, summary, detail string) {
		ps = append(ps, Problem{Path: path, Summary: summary, Detail: detail})
	}
	if s.Known("image") {
		switch {
		case strings.TrimSpace(s.Image) == "":
			add("image", "Missing image", "image is empty: set an AMI id (ami-...) or an SSM parameter name that holds one (/aws/service/...).")
		case !cloud.IsSSMImage(s.Image) && !amiIDRE().MatchString(s.Image):
			add("image", "Invalid image", fmt.Sprintf("%q is neither an AMI id (ami-0123456789abcdef0) nor an SSM parameter name (/..., or resolve:ssm:/...).", s.Image))
		}
	}
	if s.Known(MetadataHopLimitPath) && s.MetadataHopLimit != 0 && (s.MetadataHopLimit < 1 || s.MetadataHopLimit > MaxMetadataHopLimit) {
		add(MetadataHopLimitPath, "Value out of range", fmt.Sprintf("metadata_hop_limit = %d: use 1 (the default: containers on the node cannot reach the instance metadata service) to %d.", s.MetadataHopLimit, MaxMetadataHopLimit))
	}
	if s.Known("security_group_ids") {
		for i, g := range s.SecurityGroupIDs {
			if !securityGroupIDRE().MatchString(g) {
				add("security_group_ids", "Invalid security group id", fmt.Sprintf("security_group_ids[%d] = %q: a security group id looks like sg-0123456789abcdef0.", i, g))
			}
		}
	}
	if p := s.InstanceProfile; p != "" && s.Known("instance_profile") && !instanceProfileRE().MatchString(p) && !instanceProfileARN().MatchString(p) {
		add("instance_profile", "Invalid instance profile", fmt.Sprintf("%q: give the instance profile's name (letters, digits and +=,.@_-, up to 128) or its ARN (arn:aws:iam::123456789012:instance-profile/NAME).", p))
	}
	if p := s.Capacity.SpotMaxPrice; p != "" && s.Known("capacity.spot_max_price") {
		if f, err := strconv.ParseFloat(p, 64); !spotPriceRE().MatchString(p) || err != nil || f <= 0 {
			add("capacity.spot_max_price", "Invalid spot price", fmt.Sprintf("%q: write a price in USD per hour, e.g. \"12.5\".", p))
		}
	}
	if s.Known("placement_group_name") && s.PlacementGroup != "" && strings.TrimSpace(s.PlacementGroup) == "" {
		add("placement_group_name", "Invalid placement group name", "placement_group_name is blank: name an existing cluster placement group, or leave it unset for the cluster's own.")
	}
	if len(s.DataVolumes) > MaxGPUClusterDataVolumes {
		add("data_volumes", "Too many data volumes", fmt.Sprintf("%d data volumes: a node takes at most %d (/dev/sdf to /dev/sdz).", len(s.DataVolumes), MaxGPUClusterDataVolumes))
	}
	for i, v := range append([]Volume{s.RootVolume}, s.DataVolumes...) {
		path := "root_volume"
		if i > 0 {
			path = fmt.Sprintf("data_volumes[%d]", i-1)
		}
		if v.IOPS < 0 || v.Throughput < 0 || v.SizeGiB < 0 {
			add(path, "Negative volume setting", "size_gib, iops and throughput are positive numbers.")
			continue
		}
		if v.IOPS > 0 {
			lo, hi, ok := volumeIOPSRange(v.Type)
			switch {
			case !ok:
				add(path+".iops", "IOPS not provisioned", fmt.Sprintf("%s volumes have no provisioned IOPS: remove iops, or use gp3, io1 or io2.", v.Type))
			case v.IOPS < lo || v.IOPS > hi:
				typ := v.Type
				if typ == "" {
					typ = "gp3"
				}
				add(path+".iops", "IOPS out of range", fmt.Sprintf("iops = %d: %s volumes take %d to %d.", v.IOPS, typ, lo, hi))
			}
		}
	}
	if s.CapacityRetry.Attempts < 0 || s.CapacityRetry.Attempts > 20 {
		add("capacity_retry.attempts", "Value out of range", fmt.Sprintf("capacity_retry.attempts = %d: use 1 to 20.", s.CapacityRetry.Attempts))
	}
	if d := s.CapacityRetry.InitialDelay; d < 0 || d > MaxCapacityRetryDelay {
		add("capacity_retry.initial_delay", "Value out of range", fmt.Sprintf("capacity_retry.initial_delay = %s: use a duration up to %s.", d, MaxCapacityRetryDelay))
	}
	return ps
}

// TimeoutProblem checks an operation timeout the user set (path such as
// timeouts.create): it must be at least MinOperationTimeout.
func TimeoutProblem(path string, d time.Duration) *Problem {
	if d < MinOperationTimeout {
		return &Problem{Path: path, Summary: "Invalid timeout", Detail: fmt.Sprintf("%s: a timeout is a positive duration of at least %s, e.g. \"30m\".", d, MinOperationTimeout)}
	}
	return nil
}

// The instance metadata service's PUT response hop limit of GPU nodes and
// footprint instances (IMDSv2 is always required). With 1, the token's
// response does not survive the hop into a container's network namespace,
// so containers on the node cannot reach the role credentials or the
// identity document; raise it for containers that need IMDS (on EKS
// without pod identity, for instance). Nodes made before the setting
// existed run with LegacyMetadataHopLimit.
const (
	DefaultMetadataHopLimit = int(cloud.DefaultMetadataHopLimit)
	LegacyMetadataHopLimit  = int(cloud.LegacyMetadataHopLimit)
	MaxMetadataHopLimit     = int(cloud.MaxMetadataHopLimit)
	MetadataHopLimitPath    = "metadata_hop_limit"
)

// DesiredMetadataHopLimit is a desired spec's hop limit, the default for 0.
func DesiredMetadataHopLimit(v int) int {
	if v == 0 {
		return DefaultMetadataHopLimit
	}
	return v
}

// RecordedMetadataHopLimit is the hop limit of a record's nodes: 0 is a
// record made before the setting existed, whose nodes run with
// LegacyMetadataHopLimit.
func RecordedMetadataHopLimit(v int) int {
	if v == 0 {
		return LegacyMetadataHopLimit
	}
	return v
}

// metadataHopLimitChange is the change of the hop limit from a record to a
// desired spec: in place, on the running nodes and in the launch template;
// no node is replaced.
func metadataHopLimitChange(prior, desired int, what string) (bool, string) {
	from, to := RecordedMetadataHopLimit(prior), DesiredMetadataHopLimit(desired)
	if from == to {
		return false, ""
	}
	reason := fmt.Sprintf("sets the instance metadata hop limit from %d to %d in place on the running %s (ModifyInstanceMetadataOptions) and in a new launch template version: no %s is replaced", from, to, what, strings.TrimSuffix(what, "s"))
	if prior == 0 {
		// No recorded limit: state written before the setting existed, or
		// nodes found running with different limits (changed outside).
		reason = fmt.Sprintf("no hop limit is recorded: the %[1]s were launched with hop limit %[2]d before metadata_hop_limit existed (the default is now %[3]d), or run with different hop limits set outside. "+
			"This sets the instance metadata hop limit to %[4]d in place on every running %[5]s (ModifyInstanceMetadataOptions) and in a new launch template version: no %[5]s is replaced", what, from, DefaultMetadataHopLimit, to, strings.TrimSuffix(what, "s"))
	}
	return true, reason
}
