package cloud

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Tags a CPU footprint puts on its Auto Scaling group and launch template
// (the group propagates them to its instances at launch).
const (
	// TagFootprint names the footprint.
	TagFootprint = "mlplatform:cpu-footprint"
)

// FootprintResourceName is the name of a footprint's Auto Scaling group and
// launch template.
func FootprintResourceName(name string) string { return "mlplatform-cpu-" + name }

// FootprintTemplate is what a footprint's launch template holds: the node
// template the GPU cluster uses too (image, instance profile, KMS-encrypted
// volumes, user data, tags; no placement group, and no market options: the
// group's mixed instances policy asks for spot), and the security groups.
type FootprintTemplate struct {
	Node             NodeTemplate
	SecurityGroupIDs []string
}

// Hash fingerprints the template, tags included: a change makes a new
// launch template version, and a change of what an instance is (Tags left
// out: InstanceHash) rolls the instances.
func (t FootprintTemplate) Hash() string {
	return footprintHash(t.Node.TemplateHash(), t.SecurityGroupIDs)
}

// InstanceHash fingerprints what an instance is, tags left out.
func (t FootprintTemplate) InstanceHash() string {
	return footprintHash(t.Node.NodeHash(), t.SecurityGroupIDs)
}

func footprintHash(base string, sgs []string) string {
	s := slices.Clone(sgs)
	slices.Sort(s)
	sum := sha256.Sum256([]byte(base + "\x00" + strings.Join(s, ",")))
	return hex.EncodeToString(sum[:8])
}

// TagInstanceHash, on a footprint's launch template, is the InstanceHash of
// its latest version.
const TagInstanceHash = "mlplatform:instance-hash"

// EnsureFootprintTemplate makes the footprint's launch template hold t, as
// EnsureLaunchTemplate does for a GPU cluster: create, or a new default
// version when the hash differs, or nothing. owner is the creation token it
// carries; a template with another token is an *OwnershipError.
func EnsureFootprintTemplate(ctx context.Context, api EnsureLaunchTemplateAPI, footprint string, t FootprintTemplate, owner string) (LaunchTemplateRef, error) {
	sys := map[string]string{TagFootprint: footprint}
	if owner != "" {
		sys[TagCreationToken] = owner
	}
	data := t.Node.launchTemplateData(sys)
	if len(t.SecurityGroupIDs) > 0 {
		data.SecurityGroupIds = slices.Sorted(slices.Values(t.SecurityGroupIDs))
	}
	ltTags := maps.Clone(t.Node.Tags)
	if ltTags == nil {
		ltTags = map[string]string{}
	}
	maps.Copy(ltTags, sys)
	ltTags[TagTemplateHash] = t.Hash()
	ltTags[TagInstanceHash] = t.InstanceHash()
	return ensureLaunchTemplate(ctx, api, FootprintResourceName(footprint), "cpu-"+footprint, t.Hash(), data, ltTags, owner)
}

// FindFootprintTemplate reads a launch template version back into the
// footprint template it was made from (for import and drift).
func FindFootprintTemplate(ctx context.Context, api FindGPUClusterTemplateAPI, launchTemplateID string, version int64) (FootprintTemplate, error) {
	nt, err := FindGPUClusterTemplate(ctx, api, launchTemplateID, version)
	if err != nil {
		return FootprintTemplate{}, err
	}
	nt.Capacity = Capacity{}
	t := FootprintTemplate{Node: nt}
	out, err := api.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateId: aws.String(launchTemplateID), Versions: []string{fmt.Sprint(version)},
	})
	if err == nil && len(out.LaunchTemplateVersions) > 0 && out.LaunchTemplateVersions[0].LaunchTemplateData != nil {
		t.SecurityGroupIDs = slices.Sorted(slices.Values(out.LaunchTemplateVersions[0].LaunchTemplateData.SecurityGroupIds))
	}
	return t, nil
}

// DeleteFootprintTemplateAPI is what DeleteFootprintTemplate needs.
type DeleteFootprintTemplateAPI interface {
	DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, opts ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
}

// DeleteFootprintTemplate deletes a launch template; one already gone is not
// an error.
func DeleteFootprintTemplate(ctx context.Context, api DeleteFootprintTemplateAPI, id string) error {
	_, err := api.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(id)})
	if err != nil && apiErrorCode(err) != "InvalidLaunchTemplateId.NotFound" && apiErrorCode(err) != "InvalidLaunchTemplateId.Malformed" {
		return fmt.Errorf("deleting launch template %s: %w", id, err)
	}
	return nil
}
