package pulumi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// unknownInputsKey is the context key of the unknown input paths of a Diff.
type unknownInputsKey struct{}

// unknownInputs returns the core attribute paths (unknownPaths) of the
// inputs not known yet in the Diff being answered: infer decodes an unknown
// input as its zero value, which a Diff must not read as absent.
func unknownInputs(ctx context.Context) []string {
	u, _ := ctx.Value(unknownInputsKey{}).([]string)
	return u
}

// withUnknownInputs hands every Diff the paths of its unknown inputs
// (unknownInputs).
func withUnknownInputs(prov p.Provider) p.Provider {
	if diff := prov.Diff; diff != nil {
		prov.Diff = func(ctx context.Context, req p.DiffRequest) (p.DiffResponse, error) {
			paths := unknownPaths(req.Inputs)
			switch req.Urn.Type() {
			case gpuClusterToken, cpuFootprintToken:
				paths = wholeListUnknowns(req.Inputs)
			case servingEndpointToken:
				paths = servingUnknowns(paths, unknownTagPaths(req.Inputs))
			}
			return diff(context.WithValue(ctx, unknownInputsKey{}, paths), req)
		}
	}
	return withSlurmPreview(prov)
}

// unknownPaths lists the core attribute paths (snake_case, as the specs
// name them) whose values are not known yet in inputs: values other
// resources compute, during preview. An object that is unknown as a whole is
// listed by its own path; an unknown list element by its index
// (features[1], features[1].type), as the Terraform front end lists them.
func unknownPaths(inputs property.Map) []string {
	var out []string
	var walk func(prefix string, v property.Value) bool
	walk = func(path string, v property.Value) bool {
		switch {
		case v.IsComputed():
			return true
		case v.IsMap():
			for k, e := range v.AsMap().All {
				p := snakeCase(k)
				if path != "" {
					p = path + "." + p
				}
				if walk(p, e) {
					out = append(out, p)
				}
			}
		case v.IsArray():
			for i, e := range v.AsArray().All {
				p := fmt.Sprintf("%s[%d]", path, i)
				if walk(p, e) {
					out = append(out, p)
				}
			}
		}
		return false
	}
	walk("", property.New(inputs))
	return out
}

// snakeCase turns a Pulumi property name into the core's attribute name:
// kmsKeyArn -> kms_key_arn, s3Uri -> s3_uri.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// gpuClusterToken is the GPU cluster's type token.
const gpuClusterToken = "mlplatform:index:GpuCluster"

// unknownTagPaths lists tags["key"] for each tag value not known yet, or
// tags when the whole map is unknown: tag keys keep their spelling.
func unknownTagPaths(inputs property.Map) []string {
	var out []string
	if tags, ok := inputs.GetOk("tags"); ok && tags.IsMap() {
		for k, v := range tags.AsMap().All {
			if v.HasComputed() {
				out = append(out, fmt.Sprintf("tags[%q]", k))
			}
		}
	} else if ok && tags.IsComputed() {
		out = append(out, "tags")
	}
	return out
}

// wholeMaps are the map attributes checked as a whole: one value not known
// yet makes the map unknown (validation.attestation_pcrs["4"] known only
// at apply: the PCRs are checked then), as the Terraform front end reports
// it.
var wholeMaps = []string{"validation.attestation_pcrs"}

// wholeListUnknowns lists the core paths of inputs not known yet for a
// resource whose checks take a list with an unknown element as unknown as a
// whole (as the Terraform front end reports it): each element path and its
// list's path. Tag keys are known; a tag value computed by another resource
// is tags["key"], checked at apply.
func wholeListUnknowns(inputs property.Map) []string {
	paths := unknownPaths(inputs)
	out := slices.Clone(paths)
	for _, u := range paths {
		if i := strings.Index(u, "["); i > 0 {
			out = append(out, u[:i])
		}
		for _, m := range wholeMaps {
			if strings.HasPrefix(u, m+".") {
				out = append(out, m)
			}
		}
	}
	out = append(out, unknownTagPaths(inputs)...)
	slices.Sort(out)
	return slices.Compact(out)
}
