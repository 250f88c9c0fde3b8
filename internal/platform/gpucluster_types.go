package platform

import (
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// The GPU cluster's domain types. Front ends use these; internal/cloud has
// its own (the EC2 shapes), converted here at the boundary.

// Capacity types: what capacity nodes launch into.
const (
	CapacityOnDemand            = cloud.CapacityOnDemand
	CapacityCapacityReservation = cloud.CapacityCapacityReservation
	CapacityCapacityBlock       = cloud.CapacityCapacityBlock
	CapacitySpot                = cloud.CapacitySpot
)

// CapacityTypes lists the capacity types in documentation order.
func CapacityTypes() []string { return cloud.CapacityTypes() }

// ReservedTagPrefix is the provider's own tag namespace: user tags may not
// use it.
const ReservedTagPrefix = cloud.ReservedTagPrefix

// GPUClusterResourceName is the name of the launch template and of the owned
// placement group of cluster name.
func GPUClusterResourceName(name string) string { return cloud.GPUClusterResourceName(name) }

// Capacity says what capacity nodes launch into.
type Capacity struct {
	Type          string // one of CapacityTypes(); empty means on_demand
	ReservationID string // cr-...: the capacity reservation or capacity block
	SpotMaxPrice  string // USD per hour; empty: the on-demand price
}

// Volume is an EBS volume of every node. Volumes are always encrypted.
type Volume struct {
	DeviceName string // empty for the root volume: the image's root device
	SizeGiB    int32
	Type       string // gp3 (default), gp2, io1, io2, st1, sc1
	IOPS       int32
	Throughput int32 // MiB/s, gp3 only
}

// GPUNode is one node of a cluster as it exists.
type GPUNode struct {
	Index        int    // node index (rank slot), 0..node_count-1; -1 when unknown
	InstanceID   string // i-...
	State        string // pending, running, stopping, stopped, shutting-down, terminated
	StateReason  string // why it is in that state, when EC2 says
	InstanceType string
	ImageID      string
	PrivateIP    string
	Zone         string // zone name, e.g. me-central-1a
	ZoneID       string // zone id, e.g. mec1-az1
	SubnetID     string
	SpecHash     string
	LaunchTime   time.Time
	// CapacityReservationID is the reservation or capacity block the node runs in.
	CapacityReservationID string
	// SecurityGroupIDs of the primary network interface.
	SecurityGroupIDs []string
	// EFAInterfaces counts the node's interfaces of type efa.
	EFAInterfaces int
	// VolumeIDs of the EBS volumes attached.
	VolumeIDs []string
	// Tags of the instance, system tags included.
	Tags map[string]string
	// CreationToken is the owner's token.
	CreationToken string
	// MetadataHopLimit is the node's IMDS PUT response hop limit; 0 when
	// EC2 did not say.
	MetadataHopLimit int32
}

// GPUCluster is what exists for one cluster name.
type GPUCluster struct {
	Name                  string
	LaunchTemplateID      string // empty when the template does not exist
	LaunchTemplateVersion int64  // latest version
	LaunchTemplateTags    map[string]string
	LaunchSeq             int64
	PlacementGroupName    string
	PlacementGroupOwned   bool
	PlacementGroupState   string // empty when not found
	// CreationToken is the owner's token of the launch template, else of the
	// placement group or the first node; empty for a cluster made before
	// tokens existed.
	CreationToken string
	Nodes         []GPUNode // live nodes, sorted by index then launch time
	Gone          []GPUNode // shutting-down and terminated nodes still listed
	// Validation is what the validation gate found per node, when it ran.
	Validation []NodeVerdict
	// ValidationWarning is set when nodes failed and on_failure is warn.
	ValidationWarning string
	// ValidationProfile and ValidationBootstrap are what the nodes were
	// given (the validation block); "" without one.
	ValidationProfile, ValidationBootstrap string
	// SlurmControllerConfig is what the Slurm controller needs for the
	// nodes (orchestrator.slurm); "" without one.
	SlurmControllerConfig string
	// Drained are the running nodes hwprobe's health check drained in
	// Slurm since the gate passed them (ReadGPUClusterHealth); a refresh
	// reads them, nothing else.
	Drained []HwprobeDrained
}

// gpuClusterFromCloud converts what internal/cloud found; nil stays nil.
func gpuClusterFromCloud(c *cloud.GPUCluster) *GPUCluster {
	if c == nil {
		return nil
	}
	nodes := func(ns []cloud.GPUNode) []GPUNode {
		if ns == nil {
			return nil
		}
		out := make([]GPUNode, len(ns))
		for i, n := range ns {
			out[i] = GPUNode(n)
		}
		return out
	}
	return &GPUCluster{
		Name: c.Name, LaunchTemplateID: c.LaunchTemplateID, LaunchTemplateVersion: c.LaunchTemplateVersion,
		LaunchTemplateTags: c.LaunchTemplateTags, LaunchSeq: c.LaunchSeq, PlacementGroupName: c.PlacementGroupName,
		PlacementGroupOwned: c.PlacementGroupOwned, PlacementGroupState: c.PlacementGroupState, CreationToken: c.CreationToken,
		Nodes: nodes(c.Nodes), Gone: nodes(c.Gone),
	}
}

func volumesToCloud(vs []Volume) []cloud.Volume {
	if vs == nil {
		return nil
	}
	out := make([]cloud.Volume, len(vs))
	for i, v := range vs {
		out[i] = cloud.Volume(v)
	}
	return out
}

// NodeIDs returns the instance ids of the live nodes.
func (c *GPUCluster) NodeIDs() []string {
	out := make([]string, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		out = append(out, n.InstanceID)
	}
	return out
}

// OwnershipError is a part (a launch template, a placement group, a group)
// that carries another owner's creation token: a create refuses it and a
// delete leaves it alone. It is ErrNotOurs (errors.Is).
type OwnershipError = cloud.OwnershipError
