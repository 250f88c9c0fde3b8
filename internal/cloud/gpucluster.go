package cloud

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	"github.com/mlplatform/mlplatform/internal/indexrange"
)

// Tags the GPU cluster verbs put on what they create. A cluster is found by
// its name tag alone, so one paginated DescribeInstances finds every node.
const (
	// TagCluster names the cluster on its nodes, launch template and
	// placement group.
	TagCluster = "mlplatform:cluster"
	// TagNodeIndices lists, as ranges ("0-3,7"), the node indices one launch
	// request was for; a node's index is the entry at its AmiLaunchIndex. It
	// is set at launch, atomically with the instance.
	TagNodeIndices = "mlplatform:node-indices"
	// TagSpecHash is the fingerprint of the node template a node was launched
	// from (tags excluded): a node whose hash differs is rolled.
	TagSpecHash = "mlplatform:spec-hash"
	// TagZoneID is the availability zone id a node was launched in.
	TagZoneID = "mlplatform:zone-id"
	// TagLaunchSeq, on the launch template, counts launch requests; it makes
	// every launch's client token unique and every retry's identical.
	TagLaunchSeq = "mlplatform:launch-seq"
	// TagPlacementGroup, on the launch template, names the placement group.
	TagPlacementGroup = "mlplatform:placement-group"
	// TagPlacementGroupOwned, on the launch template, is "true" when the
	// cluster created its placement group and deletes it with itself.
	TagPlacementGroupOwned = "mlplatform:placement-group-owned"
	// TagCreationToken, on the launch template, the placement group, the
	// nodes and their volumes, is the random token of the create that made
	// the cluster: it proves which resource (Terraform state, Pulumi stack)
	// owns it, where the name alone cannot.
	TagCreationToken = "mlplatform:creation-token"
	// ReservedTagPrefix is the provider's own tag namespace: user tags may
	// not use it.
	ReservedTagPrefix = "mlplatform:"
)

// GPUClusterResourceName is the name of the launch template and of the owned
// placement group of cluster name.
func GPUClusterResourceName(name string) string { return "mlplatform-" + name }

// GPUNode is one instance of a cluster as EC2 reports it.
type GPUNode struct {
	Index        int    // node index (rank slot), 0..node_count-1; -1 when unknown
	InstanceID   string // i-...
	State        string // pending, running, stopping, stopped, shutting-down, terminated
	StateReason  string // why it is in that state, when EC2 says
	InstanceType string
	ImageID      string
	PrivateIP    string
	Zone         string // zone name, e.g. me-central-1a
	ZoneID       string // zone id, e.g. mec1-az1 (from the node's tag)
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
	// CreationToken is the owner's token (TagCreationToken).
	CreationToken string
	// MetadataHopLimit is the node's IMDS PUT response hop limit; 0 when
	// EC2 did not say.
	MetadataHopLimit int32
}

// Live reports whether the node counts as part of the cluster: everything
// short of shutting-down and terminated.
func (n GPUNode) Live() bool {
	switch n.State {
	case "shutting-down", "terminated":
		return false
	}
	return true
}

// GPUCluster is what exists in EC2 for one cluster name.
type GPUCluster struct {
	Name                  string
	LaunchTemplateID      string // empty when the template does not exist
	LaunchTemplateVersion int64  // latest version
	LaunchTemplateTags    map[string]string
	LaunchSeq             int64
	PlacementGroupName    string
	PlacementGroupOwned   bool
	PlacementGroupState   string // empty when not found
	// CreationToken is the owner's token (TagCreationToken) of the launch
	// template, else of the placement group or the first node; empty for a
	// cluster made before tokens existed.
	CreationToken string
	Nodes         []GPUNode // live nodes, sorted by index then launch time
	Gone          []GPUNode // shutting-down and terminated nodes still listed
}

// NodeIDs returns the instance ids of the live nodes.
func (c *GPUCluster) NodeIDs() []string {
	out := make([]string, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		out = append(out, n.InstanceID)
	}
	return out
}

// Empty reports whether nothing of the cluster exists.
func (c *GPUCluster) Empty() bool {
	return c.LaunchTemplateID == "" && len(c.Nodes) == 0 && (!c.PlacementGroupOwned || c.PlacementGroupState == "")
}

// GPUClusterAPI is every EC2 call the GPU cluster verbs make. Each verb
// declares the narrower interface it needs; EC2Client (the handle on *ec2.Client) satisfies all.
type GPUClusterAPI interface {
	FindGPUClusterAPI
	EnsurePlacementGroupAPI
	EnsureLaunchTemplateAPI
	LaunchGPUNodesAPI
	TerminateGPUNodesAPI
	WaitGPUNodesAPI
	TagGPUClusterAPI
	DeleteGPUClusterAPI
	FindSubnetAPI
	FindCapacityReservationAPI
	FindImageAPI
	FindGPUClusterTemplateAPI
}

// TagGPUClusterAPI is what TagGPUCluster needs.
type TagGPUClusterAPI interface {
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, opts ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	DeleteTags(ctx context.Context, in *ec2.DeleteTagsInput, opts ...func(*ec2.Options)) (*ec2.DeleteTagsOutput, error)
}

// LaunchToken is the RunInstances client token for one launch request of a
// cluster: a digest of the launch template (id and version), the launch
// sequence number and the node indices. A retried request (same template,
// same sequence, same indices) sends the same token, so EC2 returns the
// instances of the first attempt instead of launching again; any new launch
// (the sequence moves on after each success) gets a fresh token. Tokens are
// 36 ASCII characters (EC2 allows 64).
func LaunchToken(launchTemplateID string, version, seq int64, indices []int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%s", launchTemplateID, version, seq, FormatIndices(indices))
	return "mlp-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// FormatIndices writes sorted, de-duplicated indices as ranges (indexrange.Format).
func FormatIndices(indices []int) string { return indexrange.Format(indices) }

// ParseIndices reads what FormatIndices writes (indexrange.Parse).
func ParseIndices(s string) ([]int, error) { return indexrange.Parse(s) }

// splitIndexBatches splits sorted indices into launch requests whose index
// tag fits the 256-character limit of a tag value.
func splitIndexBatches(indices []int) [][]int {
	var out [][]int
	var cur []int
	for _, i := range indices {
		next := append(slices.Clone(cur), i)
		if len(cur) > 0 && len(FormatIndices(next)) > 250 {
			out = append(out, cur)
			cur = []int{i}
			continue
		}
		cur = next
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// apiErrorCode returns the AWS error code of err, or "".
func apiErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// capacityErrorCodes are the RunInstances errors that mean "no capacity now,
// try later or elsewhere".
var capacityErrorCodes = []string{"InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientReservedInstanceCapacity", "InsufficientHostCapacity"}

// IsCapacityError reports whether err says EC2 has no capacity for the request.
func IsCapacityError(err error) bool { return slices.Contains(capacityErrorCodes, apiErrorCode(err)) }

func ec2TagMap[T any](tags []T, kv func(T) (string, string)) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		k, v := kv(t)
		out[k] = v
	}
	return out
}
