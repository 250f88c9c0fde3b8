package platform

import (
	"maps"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// ServingEndpoint is an endpoint as it exists in AWS.
type ServingEndpoint struct {
	// Spec as observed: the model and config the endpoint serves now, each
	// instance variant's count as the endpoint runs it (so a variant scaled
	// outside the provider shows as a change), tags without the token.
	// Deployment is not observable and is left nil.
	Spec ServingEndpointSpec

	ARN           string
	Status        string
	FailureReason string
	ConfigName    string // the endpoint config the endpoint serves now
	ModelName     string
	// LastDeployment is the outcome of the last create or update this
	// provider ran: Created, Updated or RolledBack; empty after a read.
	LastDeployment string
	CreationToken  string
	// Warnings are things done but left unfinished that do not fail the
	// verb (an old endpoint config that could not be deleted).
	Warnings []string

	// alarms are the endpoint's own standard alarms, by name; nil when
	// not read.
	alarms map[string]cloud.ServingAlarm

	// configCounts are the instance counts the served endpoint config
	// declares, by variant (the Spec carries the counts the endpoint runs).
	configCounts map[string]int64
	// scheduled are this provider's scheduled actions of each scaled
	// variant, as Application Auto Scaling has them.
	scheduled map[string][]cloud.ServingScheduledAction
}

// Deployment outcomes.
const (
	DeploymentCreated    = "Created"
	DeploymentUpdated    = "Updated"
	DeploymentRolledBack = "RolledBack"
)

func servingModelConfig(name string, s ServingEndpointSpec, tags map[string]string) cloud.ServingModelConfig {
	c := cloud.ServingModelConfig{
		Name:         name,
		Image:        s.Model.Image,
		ModelDataURI: s.Model.ModelDataURI,
		Environment:  maps.Clone(s.Model.Environment),
		RoleARN:      s.Model.ExecutionRoleARN,
		Tags:         tags,

		NetworkIsolation: s.NetworkIsolationOn(),
	}
	if v := s.VPC; v != nil {
		c.SubnetIDs, c.SecurityGroupIDs = slices.Clone(v.SubnetIDs), slices.Clone(v.SecurityGroupIDs)
	}
	return c
}

func servingConfigSpec(name, model string, s ServingEndpointSpec, tags map[string]string) cloud.ServingEndpointConfigSpec {
	c := cloud.ServingEndpointConfigSpec{Name: name, KMSKeyID: s.KMSKeyARN, Tags: tags}
	for _, v := range s.Variants {
		vc := cloud.ServingVariantConfig{Name: v.Name, ModelName: model, Weight: float32(v.weight())}
		if sl := v.Serverless; sl != nil {
			vc.MemoryMB, vc.MaxConcurrency = int32(sl.MemoryMB), int32(sl.MaxConcurrency)
		} else {
			vc.InstanceType, vc.InitialCount = v.InstanceType, int32(v.InitialInstanceCount)
		}
		c.Variants = append(c.Variants, vc)
	}
	if d := s.DataCapture; d != nil {
		modes := slices.Clone(d.CaptureOptions)
		if len(modes) == 0 {
			modes = CaptureModes()
		}
		c.DataCapture = &cloud.ServingDataCaptureConfig{Enabled: d.Enabled, SamplingPercentage: int32(d.SamplingPercentage), DestinationS3URI: d.DestinationS3URI, KMSKeyID: d.KMSKeyARN, CaptureModes: modes}
	}
	return c
}

// servingDeployment translates the deployment for UpdateEndpoint. The
// routing SageMaker would fall back from (see ServingDeploymentWarnings) is
// sent as all at once, so what runs is what the plan said.
func servingDeployment(s ServingEndpointSpec) *cloud.ServingDeploymentConfig {
	d := s.Deployment
	if d == nil {
		return nil
	}
	out := &cloud.ServingDeploymentConfig{
		TrafficRouting:         "ALL_AT_ONCE",
		WaitSeconds:            int32(d.WaitSeconds),
		TerminationWaitSeconds: int32(d.TerminationWaitSeconds),
		MaxExecutionSeconds:    int32(d.MaxExecutionSeconds),
		RollbackAlarms:         append(slices.Clone(d.RollbackAlarms), ServingStandardAlarmNames(s)...),
	}
	if r := d.routing(); r != TrafficAllAtOnce && len(ServingDeploymentWarnings(s, nil)) == 0 {
		out.TrafficRouting = strings.ToUpper(r)
		out.SizeType = strings.ToUpper(d.SizeType)
		out.SizeValue = int32(d.SizeValue)
	}
	return out
}

// servingEndpointFrom puts together what AWS says of the endpoint, its
// config and its model (either may be nil when it could not be read).
func servingEndpointFrom(e *cloud.ServingEndpointInfo, c *cloud.ServingEndpointConfigInfo, m *cloud.ServingModelInfo) *ServingEndpoint {
	out := &ServingEndpoint{
		Spec:          ServingEndpointSpec{Name: e.Name, Tags: maps.Clone(e.Tags)},
		ARN:           e.ARN,
		Status:        e.Status,
		FailureReason: e.FailureReason,
		ConfigName:    e.ConfigName,
		CreationToken: e.Tags[ServingEndpointTokenTag],
	}
	if out.Spec.Tags == nil {
		out.Spec.Tags = map[string]string{}
	}
	delete(out.Spec.Tags, ServingEndpointTokenTag)
	running := map[string]cloud.ServingVariantState{}
	for _, v := range e.Variants {
		running[v.Name] = v
	}
	if c != nil {
		out.Spec.KMSKeyARN = c.KMSKeyID
		for _, v := range c.Variants {
			sv := ServingVariant{Name: v.Name, InitialWeight: float64(v.Weight)}
			if v.MemoryMB > 0 {
				sv.Serverless = &ServingServerless{MemoryMB: int64(v.MemoryMB), MaxConcurrency: int64(v.MaxConcurrency)}
			} else {
				sv.InstanceType, sv.InitialInstanceCount = v.InstanceType, int64(v.InitialCount)
				if out.configCounts == nil {
					out.configCounts = map[string]int64{}
				}
				out.configCounts[v.Name] = int64(v.InitialCount)
				// The count the endpoint runs now: a variant scaled
				// outside the provider shows as a change.
				if r, ok := running[v.Name]; ok && r.DesiredCount > 0 {
					sv.InitialInstanceCount = int64(r.DesiredCount)
				}
			}
			if out.ModelName == "" {
				out.ModelName = v.ModelName
			}
			out.Spec.Variants = append(out.Spec.Variants, sv)
		}
		if d := c.DataCapture; d != nil {
			out.Spec.DataCapture = &ServingDataCapture{Enabled: d.Enabled, SamplingPercentage: int64(d.SamplingPercentage), DestinationS3URI: d.DestinationS3URI, KMSKeyARN: d.KMSKeyID, CaptureOptions: slices.Clone(d.CaptureModes)}
		}
	}
	if m != nil {
		out.Spec.Model = ServingModel{Image: m.Image, ModelDataURI: m.ModelDataURI, Environment: maps.Clone(m.Environment), ExecutionRoleARN: m.RoleARN}
		isolated := m.NetworkIsolation
		out.Spec.NetworkIsolation = &isolated
		if len(m.SubnetIDs) > 0 || len(m.SecurityGroupIDs) > 0 {
			out.Spec.VPC = &ServingVPC{SubnetIDs: slices.Clone(m.SubnetIDs), SecurityGroupIDs: slices.Clone(m.SecurityGroupIDs)}
		}
	}
	return out
}
