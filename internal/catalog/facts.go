package catalog

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// facts is what EC2 said of one instance type in one region, and when: the
// zones offering it and, when it is offered, its capabilities. It is the unit
// the loader fetches and the disk cache keeps.
type facts struct {
	FetchedAt time.Time `json:"fetched_at"`
	ZoneIDs   []string  `json:"zone_ids"`       // offering zones; empty: not offered in the region
	Info      *liveInfo `json:"info,omitempty"` // DescribeInstanceTypes; nil when not offered or not described
}

// liveInfo is the part of EC2's InstanceTypeInfo the catalog uses. Pointers
// and Has* flags keep "EC2 said nothing" apart from a zero value.
type liveInfo struct {
	VCPUs         *int      `json:"vcpus,omitempty"`
	MemoryMiB     *int      `json:"memory_mib,omitempty"`
	HasProcessor  bool      `json:"has_processor,omitempty"`
	Architectures []string  `json:"architectures,omitempty"`
	Manufacturer  *string   `json:"manufacturer,omitempty"`
	ClockGHz      *float64  `json:"clock_ghz,omitempty"`
	HasNetwork    bool      `json:"has_network,omitempty"`
	EFA           bool      `json:"efa,omitempty"`
	MaxEFA        int       `json:"max_efa,omitempty"`
	HasPlacement  bool      `json:"has_placement,omitempty"`
	Strategies    []string  `json:"strategies,omitempty"`
	GPUs          []liveGPU `json:"gpus,omitempty"`
}

type liveGPU struct {
	Name         string `json:"name"`
	Manufacturer string `json:"manufacturer"`
	MemoryMiB    int    `json:"memory_mib"`
	Count        int    `json:"count"`
}

// infoFromEC2 keeps what the catalog uses of an EC2 answer.
func infoFromEC2(in types.InstanceTypeInfo) *liveInfo {
	li := &liveInfo{}
	if v := in.VCpuInfo; v != nil && v.DefaultVCpus != nil {
		n := int(*v.DefaultVCpus)
		li.VCPUs = &n
	}
	if m := in.MemoryInfo; m != nil && m.SizeInMiB != nil {
		n := int(*m.SizeInMiB)
		li.MemoryMiB = &n
	}
	if p := in.ProcessorInfo; p != nil {
		li.HasProcessor = true
		for _, a := range p.SupportedArchitectures {
			li.Architectures = append(li.Architectures, string(a))
		}
		li.Manufacturer = p.Manufacturer
		li.ClockGHz = p.SustainedClockSpeedInGhz
	}
	if n := in.NetworkInfo; n != nil {
		li.HasNetwork = true
		li.EFA = aws.ToBool(n.EfaSupported)
		if n.EfaInfo != nil && n.EfaInfo.MaximumEfaInterfaces != nil {
			li.MaxEFA = int(*n.EfaInfo.MaximumEfaInterfaces)
		}
	}
	if pg := in.PlacementGroupInfo; pg != nil {
		li.HasPlacement = true
		for _, s := range pg.SupportedStrategies {
			li.Strategies = append(li.Strategies, string(s))
		}
	}
	if g := in.GpuInfo; g != nil {
		for _, d := range g.Gpus {
			x := liveGPU{Name: aws.ToString(d.Name), Manufacturer: aws.ToString(d.Manufacturer), Count: int(aws.ToInt32(d.Count))}
			if d.MemoryInfo != nil && d.MemoryInfo.SizeInMiB != nil {
				x.MemoryMiB = int(*d.MemoryInfo.SizeInMiB)
			}
			li.GPUs = append(li.GPUs, x)
		}
	}
	return li
}
