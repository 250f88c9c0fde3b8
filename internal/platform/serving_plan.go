package platform

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// ServingEndpointPlan says how to go from one spec to another. A new name is
// a new endpoint (replace). The model, the variants, the data capture and
// the key are served by a new endpoint config, deployed blue/green in place:
// the endpoint, its ARN and its URL stay. So are the model's network
// settings (vpc_config, network_isolation): a model cannot change, so a new
// one serves. Tags change in place; the
// deployment settings are used by the next update and change nothing now;
// a variant's autoscaling changes its scalable target and policy in place.
type ServingEndpointPlan struct {
	Replace  []Change
	Config   []Change // served by a new endpoint config
	InPlace  []Change // tags, deployment, autoscaling
	Unknown  bool     // a compared value is known only at apply
	Warnings []Problem
}

// NewConfig reports whether the plan deploys a new endpoint config.
func (p ServingEndpointPlan) NewConfig() bool { return len(p.Config) > 0 }

// ReplacePaths are the attribute paths that force a new endpoint.
func (p ServingEndpointPlan) ReplacePaths() []string {
	var out []string
	for _, c := range p.Replace {
		out = append(out, c.Path)
	}
	return out
}

// PlanServingEndpoint compares the current spec with the desired one. Paths
// in unknown are known only at apply: a change there is assumed (a new
// endpoint config), never rejected.
func PlanServingEndpoint(old, new ServingEndpointSpec, unknown []string) ServingEndpointPlan {
	var p ServingEndpointPlan
	o := unknownPaths(unknown)
	if old.Name != new.Name {
		p.Replace = append(p.Replace, Change{"name", fmt.Sprintf("renaming %q to %q creates a new endpoint (new ARN and URL); the old one is deleted", old.Name, new.Name)})
	}
	cfg := func(path string, changed bool, format string, args ...any) {
		if !o.known(path) {
			p.Unknown = true
			p.Config = append(p.Config, Change{path, "known only at apply"})
			return
		}
		if changed {
			p.Config = append(p.Config, Change{path, fmt.Sprintf(format, args...)})
		}
	}
	cfg("model.image", old.Model.Image != new.Model.Image, "image %q to %q", old.Model.Image, new.Model.Image)
	cfg("model.model_data_uri", old.Model.ModelDataURI != new.Model.ModelDataURI, "model data %q to %q", old.Model.ModelDataURI, new.Model.ModelDataURI)
	cfg("model.environment", !maps.Equal(old.Model.Environment, new.Model.Environment), "environment changes")
	cfg("model.execution_role_arn", old.Model.ExecutionRoleARN != new.Model.ExecutionRoleARN, "execution role %q to %q", old.Model.ExecutionRoleARN, new.Model.ExecutionRoleARN)
	cfg(servingVariantsPath, !variantsEqual(old.Variants, new.Variants), "production variants change")
	cfg(servingDataCapturePath, !reflect.DeepEqual(normCapture(old.DataCapture), normCapture(new.DataCapture)), "data capture changes")
	cfg("kms_key_arn", old.KMSKeyARN != new.KMSKeyARN, "storage key %q to %q", old.KMSKeyARN, new.KMSKeyARN)
	// The model's network cannot change: a new model, deployed blue/green.
	cfg(ServingVPCPath, !servingVPCEqual(old.VPC, new.VPC), "the model's VPC configuration changes (a new model)")
	cfg(ServingNetworkIsolationPath, old.NetworkIsolationOn() != new.NetworkIsolationOn(), "network isolation %t to %t (a new model)", old.NetworkIsolationOn(), new.NetworkIsolationOn())
	for i, v := range new.Variants {
		at := fmt.Sprintf("%s[%d].autoscaling", servingVariantsPath, i)
		var before *ServingAutoscaling
		for _, o := range old.Variants {
			if strings.EqualFold(o.Name, v.Name) {
				before = o.Autoscaling
			}
		}
		if !o.known(at) {
			p.Unknown = true
			p.InPlace = append(p.InPlace, Change{at, "known only at apply"})
		} else if !reflect.DeepEqual(before, v.Autoscaling) {
			p.InPlace = append(p.InPlace, Change{at, "autoscaling changes (Application Auto Scaling target and policy, in place)"})
		}
	}
	if !reflect.DeepEqual(old.Deployment, new.Deployment) {
		p.InPlace = append(p.InPlace, Change{servingDeploymentPath, "deployment settings change (used by the next update)"})
	}
	if !maps.Equal(old.Tags, new.Tags) && !(len(old.Tags) == 0 && len(new.Tags) == 0) {
		p.InPlace = append(p.InPlace, Change{servingTagsPath, "tags change"})
	}
	if p.NewConfig() && len(p.Replace) == 0 {
		p.Warnings = ServingDeploymentWarnings(new, unknown)
	}
	return p
}

// variantsEqual compares variants by name, weights with their default.
func variantsEqual(a, b []ServingVariant) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !strings.EqualFold(x.Name, y.Name) || x.InstanceType != y.InstanceType || x.InitialInstanceCount != y.InitialInstanceCount ||
			x.weight() != y.weight() || !reflect.DeepEqual(x.Serverless, y.Serverless) {
			return false
		}
	}
	return true
}

func normCapture(d *ServingDataCapture) *ServingDataCapture {
	if d == nil {
		return nil
	}
	c := *d
	if len(c.CaptureOptions) == 0 {
		c.CaptureOptions = CaptureModes()
	}
	c.CaptureOptions = slices.Sorted(slices.Values(c.CaptureOptions))
	return &c
}
