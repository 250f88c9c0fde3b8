package cloud

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TagTemplateHash, on the launch template, is the NodeTemplate.TemplateHash
// of its latest version.
const TagTemplateHash = "mlplatform:template-hash"

// EnsurePlacementGroupAPI is what EnsurePlacementGroup needs.
type EnsurePlacementGroupAPI interface {
	CreatePlacementGroup(ctx context.Context, in *ec2.CreatePlacementGroupInput, opts ...func(*ec2.Options)) (*ec2.CreatePlacementGroupOutput, error)
	DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
}

// OwnershipError is a cluster resource that carries another owner's
// creation token: it belongs to another configuration.
type OwnershipError struct {
	Resource string // what, e.g. "launch template mlplatform-train"
	Token    string // the token it carries
}

// ErrNotOurs is what an *OwnershipError is (errors.Is); the core's
// NotOursError is one too.
var ErrNotOurs = errors.New("not owned by this resource")

func (e *OwnershipError) Is(target error) bool { return target == ErrNotOurs }

func (e *OwnershipError) Error() string {
	return fmt.Sprintf("%s belongs to another configuration (creation token %s)", e.Resource, e.Token)
}

// EnsurePlacementGroup creates cluster placement group name unless it exists
// already (an earlier, interrupted create). An existing group of another
// strategy, or carrying another creation token than tags holds, is an error.
func EnsurePlacementGroup(ctx context.Context, api EnsurePlacementGroupAPI, name string, tags map[string]string) error {
	pg, err := FindPlacementGroup(ctx, api, name)
	if err == nil {
		if pg.Strategy != types.PlacementStrategyCluster {
			return fmt.Errorf("placement group %s has strategy %s, want cluster", name, pg.Strategy)
		}
		have := ec2TagMap(pg.Tags, func(t types.Tag) (string, string) { return aws.ToString(t.Key), aws.ToString(t.Value) })
		if tok := have[TagCreationToken]; tok != "" && tags[TagCreationToken] != "" && tok != tags[TagCreationToken] {
			return &OwnershipError{Resource: "placement group " + name, Token: tok}
		}
		return nil
	}
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	_, err = api.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{
		GroupName:         aws.String(name),
		Strategy:          types.PlacementStrategyCluster,
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypePlacementGroup, Tags: ec2TagList(tags)}},
	})
	if err != nil && apiErrorCode(err) != "InvalidPlacementGroup.Duplicate" {
		return fmt.Errorf("creating placement group %s: %w", name, err)
	}
	return nil
}

// EnsureLaunchTemplateAPI is what EnsureLaunchTemplate needs.
type EnsureLaunchTemplateAPI interface {
	DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, opts ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	CreateLaunchTemplateVersion(ctx context.Context, in *ec2.CreateLaunchTemplateVersionInput, opts ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateVersionOutput, error)
	ModifyLaunchTemplate(ctx context.Context, in *ec2.ModifyLaunchTemplateInput, opts ...func(*ec2.Options)) (*ec2.ModifyLaunchTemplateOutput, error)
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, opts ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
}

// LaunchTemplateRef names a launch template version.
type LaunchTemplateRef struct {
	ID      string
	Version int64
	Seq     int64 // launch sequence number, from the template's tag
	// Changed is true when EnsureLaunchTemplate created the template or a
	// new version of it.
	Changed bool
}

// EnsureLaunchTemplate makes the cluster's launch template (mlplatform-NAME)
// hold tmpl: it creates the template, or adds a version and makes it the
// default when the template hash differs, or does nothing. pgOwned records
// whether the cluster owns its placement group; owner is the creation token
// (TagCreationToken) it carries: a template with another token is an
// *OwnershipError.
func EnsureLaunchTemplate(ctx context.Context, api EnsureLaunchTemplateAPI, cluster string, tmpl NodeTemplate, pgOwned bool, owner string) (LaunchTemplateRef, error) {
	name := GPUClusterResourceName(cluster)
	hash := tmpl.TemplateHash()
	sys := map[string]string{TagCluster: cluster}
	if owner != "" {
		sys[TagCreationToken] = owner
	}
	data := tmpl.launchTemplateData(sys)
	ltTags := maps.Clone(tmpl.Tags)
	if ltTags == nil {
		ltTags = map[string]string{}
	}
	maps.Copy(ltTags, sys)
	maps.Copy(ltTags, map[string]string{
		TagTemplateHash:   hash,
		TagPlacementGroup: tmpl.PlacementGroup, TagPlacementGroupOwned: strconv.FormatBool(pgOwned),
	})
	return ensureLaunchTemplate(ctx, api, name, cluster, hash, data, ltTags, owner)
}

// LaunchGPUNodesAPI is what LaunchGPUNodes needs.
type LaunchGPUNodesAPI interface {
	RunInstances(ctx context.Context, in *ec2.RunInstancesInput, opts ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error)
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, opts ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
}

// Launch is one request for nodes of a cluster.
type Launch struct {
	Cluster          string
	Template         LaunchTemplateRef
	Indices          []int // node indices to launch
	SubnetID         string
	ZoneID           string
	SecurityGroupIDs []string
	EFAInterfaces    int
	SpecHash         string            // NodeTemplate.NodeHash of the template version
	MetadataHopLimit int32             // the template's (NodeTemplate.HopLimit), given on the launch too
	Tags             map[string]string // the template's tags, repeated so that they win on every API
	CreationToken    string            // the owner's token (TagCreationToken)
}

// Backoff is how LaunchGPUNodes retries capacity errors. The zero value
// means 4 attempts, 10s doubling to 60s.
type Backoff struct {
	Attempts int
	Initial  time.Duration
	Max      time.Duration
	// Sleep waits d or until ctx ends; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, when set, hears of each retry (for progress logs).
	OnRetry func(attempt int, wait time.Duration, err error)
}

func (b Backoff) withDefaults() Backoff {
	if b.Attempts <= 0 {
		b.Attempts = 4
	}
	if b.Initial <= 0 {
		b.Initial = 10 * time.Second
	}
	if b.Max <= 0 {
		b.Max = time.Minute
	}
	if b.Sleep == nil {
		b.Sleep = SleepOrDone
	}
	return b
}

// CapacityError is a launch that found no capacity after every retry.
type CapacityError struct {
	ZoneID   string
	Attempts int
	Err      error
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("no capacity in %s after %d attempts: %v", e.ZoneID, e.Attempts, e.Err)
}

func (e *CapacityError) Unwrap() error { return e.Err }

// LaunchGPUNodes launches the nodes of l.Indices, all of one request at once
// (MinCount = MaxCount, so a cluster placement group gets all or nothing),
// split only where the index tag would outgrow a tag value. Each request's
// client token is LaunchToken of the template, the sequence number and the
// indices, so a retry returns the first attempt's instances. Capacity errors
// are retried with backoff and then returned as *CapacityError. The nodes
// launched before an error are returned with it, and so is the launch
// sequence number the template now carries.
func LaunchGPUNodes(ctx context.Context, api LaunchGPUNodesAPI, l Launch, b Backoff) ([]GPUNode, int64, error) {
	b = b.withDefaults()
	indices := slices.Clone(l.Indices)
	slices.Sort(indices)
	indices = slices.Compact(indices)
	var launched []GPUNode
	seq := l.Template.Seq
	for _, batch := range splitIndexBatches(indices) {
		nodes, next, err := launchBatch(ctx, api, l, batch, seq, b)
		launched = append(launched, nodes...)
		seq = next
		if err != nil {
			return launched, seq, err
		}
	}
	return launched, seq, nil
}

func launchBatch(ctx context.Context, api LaunchGPUNodesAPI, l Launch, batch []int, seq int64, b Backoff) ([]GPUNode, int64, error) {
	tags := maps.Clone(l.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	maps.Copy(tags, map[string]string{TagCluster: l.Cluster, TagNodeIndices: FormatIndices(batch), TagSpecHash: l.SpecHash, TagZoneID: l.ZoneID})
	if l.CreationToken != "" {
		tags[TagCreationToken] = l.CreationToken
	}
	for staleRetry := 0; ; staleRetry++ {
		token := LaunchToken(l.Template.ID, l.Template.Version, seq, batch)
		in := &ec2.RunInstancesInput{
			MinCount:          aws.Int32(int32(len(batch))),
			MaxCount:          aws.Int32(int32(len(batch))),
			ClientToken:       aws.String(token),
			LaunchTemplate:    &types.LaunchTemplateSpecification{LaunchTemplateId: aws.String(l.Template.ID), Version: aws.String(strconv.FormatInt(l.Template.Version, 10))},
			NetworkInterfaces: NetworkInterfaces(l.EFAInterfaces, l.SubnetID, l.SecurityGroupIDs),
			MetadataOptions:   NodeTemplate{MetadataHopLimit: l.MetadataHopLimit}.instanceMetadataOptions(),
			TagSpecifications: []types.TagSpecification{
				{ResourceType: types.ResourceTypeInstance, Tags: ec2TagList(tags)},
				{ResourceType: types.ResourceTypeVolume, Tags: ec2TagList(tags)},
			},
		}
		out, err := runWithBackoff(ctx, api, in, l.ZoneID, b)
		if err != nil {
			return nil, seq, err
		}
		var nodes []GPUNode
		allGone := len(out.Instances) > 0
		for _, inst := range out.Instances {
			n := nodeFromInstance(inst)
			if li := int(aws.ToInt32(inst.AmiLaunchIndex)); li >= 0 && li < len(batch) {
				n.Index = batch[li]
			}
			n.SpecHash, n.ZoneID = l.SpecHash, l.ZoneID
			if n.Live() {
				allGone = false
			}
			nodes = append(nodes, n)
		}
		seq++
		if _, err := api.CreateTags(ctx, &ec2.CreateTagsInput{
			Resources: []string{l.Template.ID}, Tags: []types.Tag{{Key: aws.String(TagLaunchSeq), Value: aws.String(strconv.FormatInt(seq, 10))}},
		}); err != nil {
			return nodes, seq, fmt.Errorf("recording launch sequence on launch template %s: %w", l.Template.ID, err)
		}
		// A token already used for instances since terminated (EC2 keeps
		// tokens at least 24 hours past termination) returns them again:
		// launch anew under the next sequence number.
		if allGone && staleRetry == 0 {
			continue
		}
		if allGone {
			return nil, seq, fmt.Errorf("launching nodes %s: EC2 returned only terminated instances for client token %s", FormatIndices(batch), token)
		}
		return nodes, seq, nil
	}
}

func runWithBackoff(ctx context.Context, api LaunchGPUNodesAPI, in *ec2.RunInstancesInput, zoneID string, b Backoff) (*ec2.RunInstancesOutput, error) {
	wait := b.Initial
	for attempt := 1; ; attempt++ {
		out, err := api.RunInstances(ctx, in)
		if err == nil {
			return out, nil
		}
		if !IsCapacityError(err) {
			return nil, fmt.Errorf("launching %d nodes in %s: %w", aws.ToInt32(in.MaxCount), zoneID, err)
		}
		if attempt >= b.Attempts {
			return nil, &CapacityError{ZoneID: zoneID, Attempts: attempt, Err: err}
		}
		if b.OnRetry != nil {
			b.OnRetry(attempt, wait, err)
		}
		if err := b.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("waiting to retry launch in %s: %w", zoneID, err)
		}
		wait = min(wait*2, b.Max)
	}
}

// TagGPUCluster sets tags on the given resources (nodes, volumes, template)
// and removes the keys in remove.
func TagGPUCluster(ctx context.Context, api TagGPUClusterAPI, resources []string, set map[string]string, remove []string) error {
	for chunk := range slices.Chunk(resources, 1000) {
		if len(set) > 0 {
			if _, err := api.CreateTags(ctx, &ec2.CreateTagsInput{Resources: chunk, Tags: ec2TagList(set)}); err != nil {
				return fmt.Errorf("tagging %s: %w", strings.Join(chunk, ", "), err)
			}
		}
		if len(remove) > 0 {
			var ts []types.Tag
			for _, k := range remove {
				ts = append(ts, types.Tag{Key: aws.String(k)})
			}
			if _, err := api.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: chunk, Tags: ts}); err != nil {
				return fmt.Errorf("untagging %s: %w", strings.Join(chunk, ", "), err)
			}
		}
	}
	return nil
}
