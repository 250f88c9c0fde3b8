package cloud

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Footprint is what exists of one CPU footprint: its launch template and
// its Auto Scaling group, either of which may be missing (deleted outside,
// or a create interrupted between the two).
type Footprint struct {
	Name                  string
	LaunchTemplateID      string // empty when the template does not exist
	LaunchTemplateVersion int64  // latest version
	LaunchTemplateTags    map[string]string
	Group                 *FootprintGroup // nil when the group does not exist
	ScheduledActions      []GroupScheduledAction
	// CreationToken is the owner's token (TagCreationToken) on the group,
	// else on the launch template.
	CreationToken string
	// MetadataHopLimit is what the template's latest version gives the
	// instances it launches (EC2's default, 1, when it sets none); 0 when
	// there is no template or it could not be read.
	MetadataHopLimit int32
}

// FindFootprintAPI is what FindFootprint needs of EC2.
type FindFootprintAPI interface {
	DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
}

// FindFootprint reads the footprint's launch template (and the metadata
// options of its latest version), group and scheduled actions (four
// calls). It returns ErrNotFound when neither the template nor the group
// exists.
func FindFootprint(ctx context.Context, ec2api FindFootprintAPI, asapi FootprintGroupAPI, name string) (*Footprint, error) {
	f := &Footprint{Name: name}
	rn := FootprintResourceName(name)
	lt, err := findLaunchTemplate(ctx, ec2api, rn)
	switch {
	case err == nil:
		f.LaunchTemplateID = aws.ToString(lt.LaunchTemplateId)
		f.LaunchTemplateVersion = aws.ToInt64(lt.LatestVersionNumber)
		f.LaunchTemplateTags = ec2TagMap(lt.Tags, func(t types.Tag) (string, string) { return aws.ToString(t.Key), aws.ToString(t.Value) })
		f.CreationToken = f.LaunchTemplateTags[TagCreationToken]
		out, err := ec2api.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateId: lt.LaunchTemplateId, Versions: []string{strconv.FormatInt(f.LaunchTemplateVersion, 10)},
		})
		switch {
		case err == nil && len(out.LaunchTemplateVersions) > 0 && out.LaunchTemplateVersions[0].LaunchTemplateData != nil:
			f.MetadataHopLimit = DefaultMetadataHopLimit
			if m := out.LaunchTemplateVersions[0].LaunchTemplateData.MetadataOptions; m != nil && aws.ToInt32(m.HttpPutResponseHopLimit) > 0 {
				f.MetadataHopLimit = aws.ToInt32(m.HttpPutResponseHopLimit)
			}
		case err != nil && apiErrorCode(err) != "InvalidLaunchTemplateId.NotFound":
			return nil, fmt.Errorf("describing launch template %s version %d: %w", rn, f.LaunchTemplateVersion, err)
		}
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	g, err := FindFootprintGroup(ctx, asapi, rn)
	switch {
	case err == nil:
		f.Group = g
		if tok := g.Tags[TagCreationToken]; tok != "" {
			f.CreationToken = tok
		}
		if f.ScheduledActions, err = FindScheduledActions(ctx, asapi, rn); err != nil {
			return nil, err
		}
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	if f.LaunchTemplateID == "" && f.Group == nil {
		return nil, ErrNotFound
	}
	return f, nil
}

// GroupVersion is the launch template version the group launches from
// (0 when it names $Latest or $Default, or there is no group).
func (f *Footprint) GroupVersion() int64 {
	if f.Group == nil {
		return 0
	}
	v, _ := strconv.ParseInt(f.Group.LaunchTemplateVersion, 10, 64)
	return v
}
