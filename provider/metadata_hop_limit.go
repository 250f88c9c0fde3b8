package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// metadataHopLimitAttr is metadata_hop_limit of the GPU cluster and the CPU
// footprint: the IMDS PUT response hop limit of what they launch.
func metadataHopLimitAttr(what, one string) schema.Int64Attribute {
	return schema.Int64Attribute{
		Optional: true, Computed: true,
		Default: int64default.StaticInt64(int64(platform.DefaultMetadataHopLimit)),
		MarkdownDescription: fmt.Sprintf("Hop limit of the instance metadata service's responses (IMDSv2, always required) on the %[1]s, 1 to %[3]d. Default %[2]d: a response does not survive the hop into a container's network namespace, so containers on the %[4]s cannot reach the %[4]s role's credentials or its identity document. "+
			"Raise it (2) only for containers that need the metadata service, e.g. on EKS without EKS Pod Identity or IRSA. "+
			"A change applies in place: the running %[1]s are changed (`ModifyInstanceMetadataOptions`) and the launch template gets a new version; no %[4]s is replaced. "+
			"%[1]s made by provider versions before this attribute existed run with %[5]d: the first plan after the upgrade changes them to %[2]d in place, unless it is set to %[5]d.",
			what, platform.DefaultMetadataHopLimit, platform.MaxMetadataHopLimit, one, platform.LegacyMetadataHopLimit),
	}
}

// hopLimit reads metadata_hop_limit into a spec: 0 when null (state written
// before the attribute existed: the nodes run with the legacy limit), its
// path in unknown when unknown at plan.
func hopLimit(v types.Int64, unknown *[]string) int {
	if v.IsUnknown() {
		*unknown = append(*unknown, platform.MetadataHopLimitPath)
		return 0
	}
	return int(v.ValueInt64())
}

// setHopLimit writes a record's hop limit to state; a record made before
// the attribute existed (0) stays null.
func setHopLimit(v *types.Int64, limit int) {
	if limit == 0 {
		*v = types.Int64Null()
		return
	}
	*v = types.Int64Value(int64(limit))
}

// warnHopLimit says, in the plan, why the hop limit changes and that it
// changes in place.
func warnHopLimit(cs []platform.Change, diags *diag.Diagnostics) {
	for _, c := range cs {
		if c.Path == platform.MetadataHopLimitPath {
			diags.AddAttributeWarning(path.Root(c.Path), "Instance metadata hop limit changes in place", c.Reason)
		}
	}
}
