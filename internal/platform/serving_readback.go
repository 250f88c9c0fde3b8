package platform

import (
	"maps"
	"slices"
)

// ServingEndpointReadBack is what exists, in the shape the user declared it:
// what both front ends write into their state after a create, update,
// refresh or import.
type ServingEndpointReadBack struct {
	// Spec is what exists, with the rules of ReadBackServingEndpointOf.
	Spec ServingEndpointSpec
	// TagsAll is every tag the endpoint carries, the token aside.
	TagsAll map[string]string

	ARN            string
	Status         string
	FailureReason  string
	ConfigName     string
	ModelName      string
	LastDeployment string
	// StandardAlarmNames are the standard alarms the read-back spec has
	// (ServingStandardAlarmNames); nil when none.
	StandardAlarmNames []string
}

// ReadBackServingEndpoint is ReadBackServingEndpointOf under the
// environment's default tags.
func (e *Env) ReadBackServingEndpoint(found *ServingEndpoint, declared ServingEndpointSpec, lastDeployment string) ServingEndpointReadBack {
	return ReadBackServingEndpointOf(found, declared, lastDeployment, e.DefaultTags)
}

// ReadBackServingEndpointOf puts what AWS says of an endpoint into the
// declared shape, one set of rules for both front ends:
//   - what AWS does not report keeps its declared value: the deployment
//     settings;
//   - each variant's autoscaling is what Application Auto Scaling has
//     registered, so a target changed outside shows as a change;
//   - a weight left unset stays unset where AWS reports the default, 1;
//     capture options left unset stay unset where AWS reports both;
//   - each instance variant's count is the count the endpoint runs now, so
//     a variant scaled outside the provider shows as a change (drift),
//     except a variant with autoscaling: autoscaling owns its count, which
//     reads back as its endpoint config declares it;
//   - the model's VPC configuration keeps the declared order of its ids
//     when they are the same; network isolation stays unset where it was
//     not declared and is the default;
//   - tags are the endpoint's tags less the default tags (same value) the
//     user did not set; TagsAll are all of them;
//   - lastDeployment (the front end's record) is kept unless this call
//     deployed something.
func ReadBackServingEndpointOf(found *ServingEndpoint, declared ServingEndpointSpec, lastDeployment string, defaultTags map[string]string) ServingEndpointReadBack {
	s := found.Spec
	out := ServingEndpointReadBack{
		TagsAll:        maps.Clone(s.Tags),
		ARN:            found.ARN,
		Status:         found.Status,
		FailureReason:  found.FailureReason,
		ConfigName:     found.ConfigName,
		ModelName:      found.ModelName,
		LastDeployment: lastDeployment,
	}
	if found.LastDeployment != "" {
		out.LastDeployment = found.LastDeployment
	}
	if out.TagsAll == nil {
		out.TagsAll = map[string]string{}
	}
	rs := ServingEndpointSpec{
		Name:             s.Name,
		Model:            s.Model,
		KMSKeyARN:        s.KMSKeyARN,
		Deployment:       declared.Deployment,
		VPC:              readBackServingVPC(s.VPC, declared.VPC),
		NetworkIsolation: readBackNetworkIsolation(s.NetworkIsolation, declared),
	}
	if d := declared.Deployment; d != nil && d.StandardAlarms != nil {
		dc := *d
		dc.StandardAlarms = readBackStandardAlarms(declared, found.alarms)
		rs.Deployment = &dc
	}
	if len(rs.Model.Environment) == 0 && declared.Model.Environment != nil {
		rs.Model.Environment = map[string]string{}
	}
	for _, v := range s.Variants {
		var prior *ServingVariant
		for i := range declared.Variants {
			if declared.Variants[i].Name == v.Name {
				prior = &declared.Variants[i]
			}
		}
		if prior != nil {
			if prior.InitialWeight == 0 && v.InitialWeight == 1 {
				v.InitialWeight = 0
			}
		} else if v.InitialWeight == 1 {
			v.InitialWeight = 0
		}
		rs.Variants = append(rs.Variants, v)
	}
	foldServingSchedules(&rs, found, declared)
	if d := s.DataCapture; d != nil {
		c := *d
		c.CaptureOptions = slices.Clone(d.CaptureOptions)
		p := declared.DataCapture
		if (p == nil || len(p.CaptureOptions) == 0) && len(c.CaptureOptions) == 2 && slices.Contains(c.CaptureOptions, CaptureInput) && slices.Contains(c.CaptureOptions, CaptureOutput) {
			c.CaptureOptions = nil
		}
		if p != nil && len(p.CaptureOptions) > 0 && normCapture(p) != nil && slices.Equal(normCapture(p).CaptureOptions, normCapture(&c).CaptureOptions) {
			c.CaptureOptions = slices.Clone(p.CaptureOptions) // the declared order
		}
		rs.DataCapture = &c
	}
	own := map[string]string{}
	for k, v := range s.Tags {
		if dv, isDefault := defaultTags[k]; isDefault && dv == v {
			if _, mine := declared.Tags[k]; !mine {
				continue
			}
		}
		own[k] = v
	}
	if len(own) > 0 || declared.Tags != nil {
		rs.Tags = own
	}
	out.Spec = rs
	out.StandardAlarmNames = ServingStandardAlarmNames(rs)
	return out
}
