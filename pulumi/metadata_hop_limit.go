package pulumi

import (
	"context"
	"fmt"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// metadataHopLimitDoc describes metadataHopLimit as the Terraform schema
// describes metadata_hop_limit.
func metadataHopLimitDoc(what, one string) string {
	return fmt.Sprintf("Hop limit of the instance metadata service's responses (IMDSv2, always required) on the %[1]s, 1 to %[3]d. Default %[2]d: a response does not survive the hop into a container's network namespace, so containers on the %[4]s cannot reach the %[4]s role's credentials or its identity document. "+
		"Raise it (2) only for containers that need the metadata service, e.g. on EKS without EKS Pod Identity or IRSA. "+
		"A change applies in place: the running %[1]s are changed (ModifyInstanceMetadataOptions) and the launch template gets a new version; no %[4]s is replaced. "+
		"%[1]s made by provider versions before this property existed run with %[5]d: the first update after the upgrade changes them to %[2]d in place, unless it is set to %[5]d.",
		what, platform.DefaultMetadataHopLimit, platform.MaxMetadataHopLimit, one, platform.LegacyMetadataHopLimit)
}

// unknownInput reports whether the input key is a computed (unknown) value.
func unknownInput(inputs property.Map, key string) bool {
	v, ok := inputs.GetOk(key)
	return ok && v.IsComputed()
}

// warnHopLimit says, in the preview, why the hop limit changes and that it
// changes in place.
func warnHopLimit(ctx context.Context, name string, cs []platform.Change) {
	for _, c := range cs {
		if c.Path == platform.MetadataHopLimitPath {
			p.GetLogger(ctx).Warningf("%s: %s: %s", name, propertyPath(c.Path), c.Reason)
		}
	}
}
