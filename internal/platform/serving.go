package platform

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// Traffic routings of a blue/green deployment.
const (
	TrafficAllAtOnce = "all_at_once"
	TrafficCanary    = "canary"
	TrafficLinear    = "linear"
)

// Step size units of canary and linear routing.
const (
	SizeCapacityPercent = "capacity_percent"
	SizeInstanceCount   = "instance_count"
)

// Data capture modes.
const (
	CaptureInput  = "Input"
	CaptureOutput = "Output"
)

// Limits of SageMaker real-time endpoints.
const (
	svMaxNameLen           = 63
	svMaxVariants          = 10
	svMaxInstanceCount     = 1000
	svMinServerlessMemory  = 1024
	svMaxServerlessMemory  = 6144
	svMaxServerlessConc    = 200
	ServingMaxWaitSeconds  = 3600
	svMinMaxExecution      = 600
	svMaxMaxExecution      = 28800
	svMaxRollbackAlarms    = 10
	svMaxEnvironment       = 100
	servingTagsPath        = "tags"
	servingVariantsPath    = "variants"
	servingDeploymentPath  = "deployment"
	servingDataCapturePath = "data_capture"
)

// ServingEndpointTagsPath is the attribute path of a serving endpoint's tags,
// for the required-tag rule.
const ServingEndpointTagsPath = servingTagsPath

// ServingEndpointTokenTag is the tag in which CreateServingEndpoint writes a
// fresh random token on the endpoint (and its model and config): an endpoint
// that carries the token of this create is provably the one it made.
const ServingEndpointTokenTag = FeatureStoreTagPrefix + "creation-token"

// Default bounds of the serving endpoint's waits: a wait whose Timeout is 0
// gets these, whichever front end asked. A GPU endpoint takes 10 to 20
// minutes to come into service; a blue/green update with canary or linear
// steps and a termination wait can take much longer.
const (
	ServingEndpointCreateTimeout = 60 * time.Minute
	ServingEndpointUpdateTimeout = 90 * time.Minute
	ServingEndpointDeleteTimeout = 30 * time.Minute
	// servingRecordTimeout bounds the lookups that record what exists after
	// a failure, on a fresh context.
	servingRecordTimeout = 20 * time.Second
)

var (
	svNameRE = lazyRegexp(`^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$`)
	// ml.FAMILY.SIZE, e.g. ml.g6.xlarge, ml.m5.large, ml.p5.48xlarge.
	svInstanceTypeRE = lazyRegexp(`^ml\.([a-z0-9-]+)\.(medium|large|xlarge|[0-9]+xlarge)$`)
	svEnvKeyRE       = lazyRegexp(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	svAlarmRE        = lazyRegexp(`^[^\x00-\x1f]{1,255}$`)
)

// servingFamilies are the instance families SageMaker serves real-time
// endpoints on (the ProductionVariantInstanceType enum of the SageMaker API,
// by family). The catalog holds EC2 types, not ml.* types: this list is the
// rule until it does.
var servingFamilies = []string{
	"c4", "c5", "c5d", "c6g", "c6gd", "c6gn", "c6i", "c6id", "c7g", "c7i",
	"g4dn", "g5", "g6", "g6e", "g7e", "gr6",
	"inf1", "inf2",
	"m4", "m5", "m5d", "m6g", "m6gd", "m6i", "m6id", "m7i",
	"p2", "p3", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200",
	"r5", "r5d", "r6g", "r6gd", "r6i", "r6id", "r7i", "r8g",
	"t2", "t3",
	"trn1", "trn1n", "trn2",
}

// servingLocalStorageFamilies are the ml.* families whose instances carry
// local NVMe instance storage (SageMaker's host instance storage volumes;
// the EC2 instance store of the same family). SageMaker encrypts that
// storage with a hardware module on the instance (AES-256) and keeps no key
// for it: CreateEndpointConfig refuses a KmsKeyId when any variant runs on
// such a type. The catalog holds no instance storage facts: this list is
// the rule until it does.
var servingLocalStorageFamilies = []string{
	"c5d", "c6gd", "c6id",
	"g4dn", "g5", "g6", "g6e", "g7e", "gr6",
	"m5d", "m6gd", "m6id",
	"p4d", "p4de", "p5", "p5e", "p5en", "p6-b200",
	"r5d", "r6gd", "r6id",
	"trn1", "trn1n", "trn2",
}

// ServingLocalStorage reports whether ml.* instance type t has local NVMe
// instance storage, encrypted by the instance's hardware: an endpoint with a
// variant on it takes no kms_key_arn.
func ServingLocalStorage(t string) bool {
	m := svInstanceTypeRE().FindStringSubmatch(t)
	return m != nil && slices.Contains(servingLocalStorageFamilies, m[1])
}

// servingLocalStorageVariant is the first instance variant of s on a type
// with local instance storage: its index, or -1 when there is none. known
// is false when the variants, or an instance type, are not known yet (then
// it cannot tell).
func servingLocalStorageVariant(s ServingEndpointSpec, o unknownPaths) (i int, known bool) {
	if !o.known(servingVariantsPath) {
		return -1, false
	}
	known = true
	for j, x := range s.Variants {
		if x.Serverless != nil {
			continue
		}
		if !o.known(fmt.Sprintf("variants[%d].instance_type", j)) {
			known = false
			continue
		}
		if ServingLocalStorage(x.InstanceType) {
			return j, true
		}
	}
	return -1, known
}

// ServingFamilies returns the ml.* instance families accepted for a variant.
func ServingFamilies() []string { return slices.Clone(servingFamilies) }

// TrafficRoutings returns the accepted traffic routings.
func TrafficRoutings() []string { return []string{TrafficAllAtOnce, TrafficCanary, TrafficLinear} }

// SizeTypes returns the accepted canary and linear step units.
func SizeTypes() []string { return []string{SizeCapacityPercent, SizeInstanceCount} }

// CaptureModes returns the accepted data capture options.
func CaptureModes() []string { return []string{CaptureInput, CaptureOutput} }

// ServingEndpointSpec is a SageMaker real-time endpoint as declared: a model,
// the endpoint config that serves it, and the endpoint; what both front ends
// translate their input to.
type ServingEndpointSpec struct {
	Name        string
	Model       ServingModel
	Variants    []ServingVariant
	Deployment  *ServingDeployment // nil: all at once, SageMaker's defaults
	DataCapture *ServingDataCapture
	KMSKeyARN   string // encrypts the instances' storage volumes
	Tags        map[string]string
	// VPC puts the model's container in the customer's VPC (vpc_config);
	// nil: SageMaker's own network.
	VPC *ServingVPC
	// NetworkIsolation is network_isolation; nil: the default
	// (ServingNetworkIsolationDefault, NetworkIsolationOn).
	NetworkIsolation *bool
}

// ServingModel is the container that serves.
type ServingModel struct {
	Image            string // ECR image URI, in the jurisdiction
	ModelDataURI     string // s3:// URI of model.tar.gz; optional
	Environment      map[string]string
	ExecutionRoleARN string
}

// ServingVariant is one production variant: instances (InstanceType and
// InitialInstanceCount) or serverless.
type ServingVariant struct {
	Name                 string
	InstanceType         string // ml.*
	InitialInstanceCount int64
	InitialWeight        float64 // default 1
	Serverless           *ServingServerless
	Autoscaling          *ServingAutoscaling
}

// ServingServerless is a serverless variant's size.
type ServingServerless struct {
	MemoryMB       int64 // 1024 to 6144, in steps of 1024
	MaxConcurrency int64 // 1 to 200
}

// ServingDefaultCooldownSeconds is the scale-in and scale-out cooldown a
// front end declares when the user sets none (Application Auto Scaling's
// default for SageMaker variants).
const ServingDefaultCooldownSeconds = 300

// ServingAutoscaling bounds a variant's instance count: Application Auto
// Scaling keeps it between Min and Max, tracking TargetInvocations per
// instance per minute.
type ServingAutoscaling struct {
	Min, Max                int64
	TargetInvocations       float64 // per instance per minute
	ScaleInCooldownSeconds  int64
	ScaleOutCooldownSeconds int64
	// Schedules set the bounds at times (see serving_schedule.go).
	Schedules []Schedule
}

// ServingDeployment is how an update shifts traffic from the old fleet to
// the new one (blue/green).
type ServingDeployment struct {
	TrafficRouting         string // all_at_once (default), canary, linear
	SizeType               string // canary and linear: capacity_percent or instance_count
	SizeValue              int64
	WaitSeconds            int64 // between steps (canary, linear) or before the switch
	TerminationWaitSeconds int64 // the old fleet is kept this long after the switch
	MaxExecutionSeconds    int64 // 0: SageMaker's default
	RollbackAlarms         []string
	// StandardAlarms, when set, makes the provider create the standard
	// rollback alarms (serving_alarms.go), rolled back on beside
	// RollbackAlarms.
	StandardAlarms *ServingStandardAlarms
}

// ServingDataCapture records requests and responses to S3.
type ServingDataCapture struct {
	Enabled            bool
	SamplingPercentage int64
	DestinationS3URI   string
	KMSKeyARN          string
	CaptureOptions     []string // Input, Output; default both
}

func (d *ServingDeployment) routing() string {
	if d == nil || d.TrafficRouting == "" {
		return TrafficAllAtOnce
	}
	return d.TrafficRouting
}

func (v ServingVariant) weight() float64 {
	if v.InitialWeight == 0 {
		return 1
	}
	return v.InitialWeight
}

// ValidateServingEndpoint checks a spec against SageMaker's rules before
// anything is called. Values at the paths in unknown are not known yet (plan
// time) and are skipped. It returns every problem, each on its attribute
// path; none means valid.
func ValidateServingEndpoint(s ServingEndpointSpec, unknown []string) []Problem {
	v := &validator{unknown: unknownPaths(unknown)}
	if !svNameRE().MatchString(s.Name) {
		v.add("name", "endpoint name %q must be 1 to %d letters, digits and hyphens, starting and ending with a letter or digit", s.Name, svMaxNameLen)
	}
	svModel(v, s.Model)
	svVariants(v, s)
	svDeployment(v, s.Deployment)
	svStandardAlarms(v, s)
	svDataCapture(v, s.DataCapture)
	if d := s.DataCapture; d != nil && d.Enabled && v.unknown.known(servingVariantsPath) {
		for i, x := range s.Variants {
			if x.Serverless != nil {
				v.add(servingDataCapturePath, "variants[%d] (%q) is serverless, and SageMaker serverless endpoints do not capture data: remove data_capture (or set enabled = false), or serve on instances", i, x.Name)
				break
			}
		}
	}
	v.kmsKey("kms_key_arn", s.KMSKeyARN)
	svNetwork(v, s)
	if i, _ := servingLocalStorageVariant(s, v.unknown); i >= 0 && s.KMSKeyARN != "" && v.unknown.known("kms_key_arn") {
		v.add("kms_key_arn", "variants[%d] (%q) runs on %s, which has local NVMe instance storage: SageMaker encrypts it with a hardware module on the instance and refuses a KMS key for it (CreateEndpointConfig fails). "+
			"Remove kms_key_arn: no key is needed there, and the rule that requires customer managed keys does not apply to instance storage (data_capture.kms_key_arn still encrypts the captures)",
			i, s.Variants[i].Name, s.Variants[i].InstanceType)
	}
	svTags(v, s.Tags)
	return v.errs
}

func svModel(v *validator, m ServingModel) {
	if m.Image == "" {
		v.add("model.image", "the model's container image must be set: an ECR image URI (ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG)")
	} else if _, err := residency.ParseECRImage(m.Image); err != nil {
		v.add("model.image", "%q is not an ECR image URI (ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG or @sha256:DIGEST): %v", m.Image, err)
	}
	if m.ModelDataURI != "" && !strings.HasPrefix(m.ModelDataURI, "s3://") {
		v.add("model.model_data_uri", "%q is not an S3 URI (s3://BUCKET/KEY)", m.ModelDataURI)
	} else if m.ModelDataURI != "" {
		if _, err := residency.ParseS3URI(m.ModelDataURI); err != nil {
			v.add("model.model_data_uri", "%q: %v", m.ModelDataURI, err)
		}
	}
	if len(m.Environment) > svMaxEnvironment {
		v.add("model.environment", "%d variables; a container takes at most %d", len(m.Environment), svMaxEnvironment)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Environment)) {
		if !svEnvKeyRE().MatchString(k) || len(k) > 1024 {
			v.add(fmt.Sprintf("model.environment[%q]", k), "environment variable name %q must be letters, digits and underscores, not starting with a digit", k)
		}
	}
	if m.ExecutionRoleARN == "" {
		v.add("model.execution_role_arn", "the execution role must be set: the IAM role SageMaker assumes to pull the image and the model data")
	} else if !iamRoleARNRE().MatchString(m.ExecutionRoleARN) {
		v.add("model.execution_role_arn", "%q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", m.ExecutionRoleARN)
	}
}

// ServingInstanceTypeProblem says what is wrong with an ml.* instance type,
// or "".
func ServingInstanceTypeProblem(t string) string {
	m := svInstanceTypeRE().FindStringSubmatch(t)
	if m == nil {
		return fmt.Sprintf("%q is not a SageMaker instance type (ml.FAMILY.SIZE, e.g. ml.g6.xlarge or ml.m5.large)", t)
	}
	if !slices.Contains(servingFamilies, m[1]) {
		return fmt.Sprintf("SageMaker does not serve real-time endpoints on the %s family (%q); use one of: %s", m[1], t, strings.Join(servingFamilies, ", "))
	}
	return ""
}

func svVariants(v *validator, s ServingEndpointSpec) {
	if !v.unknown.known(servingVariantsPath) {
		return
	}
	vs := s.Variants
	switch {
	case len(vs) == 0:
		v.add(servingVariantsPath, "an endpoint needs at least one production variant")
		return
	case len(vs) > svMaxVariants:
		v.add(servingVariantsPath, "%d variants declared; an endpoint config holds at most %d", len(vs), svMaxVariants)
	}
	seen := map[string]int{}
	serverless, instances := 0, 0
	for i, x := range vs {
		at := fmt.Sprintf("variants[%d]", i)
		if !svNameRE().MatchString(x.Name) {
			v.add(at+".name", "variant name %q must be 1 to %d letters, digits and hyphens, starting and ending with a letter or digit", x.Name, svMaxNameLen)
		} else if j, dup := seen[strings.ToLower(x.Name)]; dup {
			v.add(at+".name", "variant name %q duplicates variants[%d]", x.Name, j)
		} else {
			seen[strings.ToLower(x.Name)] = i
		}
		if x.InitialWeight < 0 {
			v.add(at+".initial_weight", "weight must be 0 or more (got %g)", x.InitialWeight)
		}
		switch {
		case x.Serverless != nil && x.InstanceType != "":
			v.add(at+".serverless", "variant %q sets both instance_type and serverless; a variant runs on instances or is serverless, not both", x.Name)
		case x.Serverless != nil:
			serverless++
			sl := x.Serverless
			if sl.MemoryMB < svMinServerlessMemory || sl.MemoryMB > svMaxServerlessMemory || sl.MemoryMB%1024 != 0 {
				v.add(at+".serverless.memory_size_mb", "memory must be 1024, 2048, 3072, 4096, 5120 or 6144 MB (got %d)", sl.MemoryMB)
			}
			if sl.MaxConcurrency < 1 || sl.MaxConcurrency > svMaxServerlessConc {
				v.add(at+".serverless.max_concurrency", "max concurrency must be between 1 and %d (got %d)", svMaxServerlessConc, sl.MaxConcurrency)
			}
			if x.InitialInstanceCount != 0 {
				v.add(at+".initial_instance_count", "variant %q is serverless; initial_instance_count applies only to instance variants", x.Name)
			}
			if x.Autoscaling != nil {
				v.add(at+".autoscaling", "variant %q is serverless and scales by itself up to max_concurrency; autoscaling applies only to instance variants", x.Name)
			}
		case x.InstanceType == "":
			if v.unknown.known(at + ".instance_type") {
				v.add(at+".instance_type", "variant %q needs an instance_type (ml.*) or a serverless block", x.Name)
			}
		default:
			instances++
			if p := ServingInstanceTypeProblem(x.InstanceType); p != "" {
				v.add(at+".instance_type", "%s", p)
			}
			if x.InitialInstanceCount < 1 || x.InitialInstanceCount > svMaxInstanceCount {
				v.add(at+".initial_instance_count", "variant %q needs initial_instance_count between 1 and %d (got %d)", x.Name, svMaxInstanceCount, x.InitialInstanceCount)
			}
		}
		if a := x.Autoscaling; a != nil && x.Serverless == nil {
			if a.Min < 1 {
				v.add(at+".autoscaling.min_capacity", "min_capacity must be at least 1 (got %d)", a.Min)
			}
			if a.Max < a.Min {
				v.add(at+".autoscaling.max_capacity", "max_capacity (%d) must be at least min_capacity (%d)", a.Max, a.Min)
			}
			if a.Max > svMaxInstanceCount {
				v.add(at+".autoscaling.max_capacity", "max_capacity must be at most %d (got %d)", svMaxInstanceCount, a.Max)
			}
			if a.TargetInvocations <= 0 {
				v.add(at+".autoscaling.target_invocations_per_instance", "the target must be more than 0 invocations per instance per minute (got %g)", a.TargetInvocations)
			}
			if a.ScaleInCooldownSeconds < 0 {
				v.add(at+".autoscaling.scale_in_cooldown_seconds", "the cooldown must be 0 seconds or more (got %d)", a.ScaleInCooldownSeconds)
			}
			if a.ScaleOutCooldownSeconds < 0 {
				v.add(at+".autoscaling.scale_out_cooldown_seconds", "the cooldown must be 0 seconds or more (got %d)", a.ScaleOutCooldownSeconds)
			}
			if x.InitialInstanceCount > 0 && (x.InitialInstanceCount < a.Min || x.InitialInstanceCount > a.Max) && a.Max >= a.Min {
				v.add(at+".initial_instance_count", "initial_instance_count %d is outside the autoscaling range %d to %d", x.InitialInstanceCount, a.Min, a.Max)
			}
			svSchedules(v, at, a)
		}
	}
	if serverless > 0 && instances > 0 {
		v.add(servingVariantsPath, "%d serverless and %d instance variants declared: SageMaker does not mix them in one endpoint config; make every variant serverless, or none", serverless, instances)
	}
}

func svDeployment(v *validator, d *ServingDeployment) {
	if d == nil {
		return
	}
	const at = servingDeploymentPath
	switch d.routing() {
	case TrafficAllAtOnce:
		if d.SizeType != "" || d.SizeValue != 0 {
			v.add(at+".size_type", "a step size applies only to traffic_routing = %q or %q", TrafficCanary, TrafficLinear)
		}
	case TrafficCanary, TrafficLinear:
		switch d.SizeType {
		case SizeCapacityPercent:
			if d.SizeValue < 1 || d.SizeValue > 100 {
				v.add(at+".size_value", "a step of %s must be between 1 and 100 (got %d)", SizeCapacityPercent, d.SizeValue)
			}
		case SizeInstanceCount:
			if d.SizeValue < 1 {
				v.add(at+".size_value", "a step of %s must be at least 1 (got %d)", SizeInstanceCount, d.SizeValue)
			}
		default:
			v.add(at+".size_type", "traffic_routing = %q needs size_type %s or %s (got %q)", d.routing(), SizeCapacityPercent, SizeInstanceCount, d.SizeType)
		}
	default:
		v.add(at+".traffic_routing", "traffic routing %q; use one of %s", d.TrafficRouting, strings.Join(TrafficRoutings(), ", "))
	}
	if d.WaitSeconds < 0 || d.WaitSeconds > ServingMaxWaitSeconds {
		v.add(at+".wait_seconds", "must be between 0 and %d (got %d)", ServingMaxWaitSeconds, d.WaitSeconds)
	}
	if d.TerminationWaitSeconds < 0 || d.TerminationWaitSeconds > ServingMaxWaitSeconds {
		v.add(at+".termination_wait_seconds", "must be between 0 and %d (got %d)", ServingMaxWaitSeconds, d.TerminationWaitSeconds)
	}
	if d.MaxExecutionSeconds != 0 && (d.MaxExecutionSeconds < svMinMaxExecution || d.MaxExecutionSeconds > svMaxMaxExecution) {
		v.add(at+".maximum_execution_timeout_seconds", "must be between %d and %d (got %d)", svMinMaxExecution, svMaxMaxExecution, d.MaxExecutionSeconds)
	}
	if len(d.RollbackAlarms) > svMaxRollbackAlarms {
		v.add(at+".rollback_alarms", "%d alarms; at most %d", len(d.RollbackAlarms), svMaxRollbackAlarms)
	}
	for i, a := range d.RollbackAlarms {
		if !svAlarmRE().MatchString(a) {
			v.add(fmt.Sprintf("%s.rollback_alarms[%d]", at, i), "alarm name %q must be 1 to 255 printable characters", a)
		}
	}
}

func svDataCapture(v *validator, d *ServingDataCapture) {
	if d == nil {
		return
	}
	const at = servingDataCapturePath
	if d.SamplingPercentage < 0 || d.SamplingPercentage > 100 {
		v.add(at+".sampling_percentage", "must be between 0 and 100 (got %d)", d.SamplingPercentage)
	}
	if d.DestinationS3URI == "" {
		if v.unknown.known(at + ".destination_s3_uri") {
			v.add(at+".destination_s3_uri", "data capture needs an S3 destination (s3://BUCKET/PREFIX) in the jurisdiction")
		}
	} else if _, err := residency.ParseS3URI(d.DestinationS3URI); err != nil || !strings.HasPrefix(d.DestinationS3URI, "s3://") {
		v.add(at+".destination_s3_uri", "%q is not an S3 URI (s3://BUCKET/PREFIX)", d.DestinationS3URI)
	}
	v.kmsKey(at+".kms_key_arn", d.KMSKeyARN)
	seen := map[string]bool{}
	for i, o := range d.CaptureOptions {
		if !slices.Contains(CaptureModes(), o) {
			v.add(fmt.Sprintf("%s.capture_options[%d]", at, i), "capture option %q; use %s or %s", o, CaptureInput, CaptureOutput)
		} else if seen[o] {
			v.add(fmt.Sprintf("%s.capture_options[%d]", at, i), "capture option %q is listed twice", o)
		}
		seen[o] = true
	}
}

func svTags(v *validator, tags map[string]string) {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		at := fmt.Sprintf("tags[%q]", k)
		switch {
		case k == "" || len(k) > sageMakerMaxTagKeyLen:
			v.add(servingTagsPath, "tag key %q must be 1 to %d characters long", k, sageMakerMaxTagKeyLen)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			v.add(at, "tag key %q uses the reserved prefix aws:", k)
		case strings.HasPrefix(strings.ToLower(k), FeatureStoreTagPrefix):
			v.add(at, "tag key %q uses the prefix %s, which the provider keeps for its own tags (the creation token); rename the tag", k, FeatureStoreTagPrefix)
		case len(tags[k]) > sageMakerMaxTagValueLen:
			v.add(at, "tag %q has a value of %d characters; at most %d are allowed", k, len(tags[k]), sageMakerMaxTagValueLen)
		}
	}
}

// ServingEndpointResidencyRefs lists the locations a spec refers to: the
// image's registry, the model data and capture buckets, the KMS keys and the
// role. Paths in unknown are left out: check them again once known.
func ServingEndpointResidencyRefs(s ServingEndpointSpec, unknown []string) []residency.Ref {
	o := unknownPaths(unknown)
	var refs []residency.Ref
	add := func(path string, kind residency.Kind, value string) {
		if value != "" && o.known(path) {
			refs = append(refs, residency.Ref{Path: path, Kind: kind, Value: value})
		}
	}
	addKey := func(path, value string) {
		if o.known(path) {
			refs = append(refs, residency.KeyRef(path, value))
		}
	}
	add("model.image", residency.KindECRImage, s.Model.Image)
	add("model.model_data_uri", residency.KindS3URI, s.Model.ModelDataURI)
	add("model.execution_role_arn", residency.KindARN, s.Model.ExecutionRoleARN)
	// The volume key: none on local instance storage (hardware encrypted,
	// SageMaker refuses a key there), so nothing to require; while the
	// variants are not known, checked again at apply.
	if i, known := servingLocalStorageVariant(s, o); (known && i < 0) || s.KMSKeyARN != "" {
		addKey("kms_key_arn", s.KMSKeyARN)
	}
	if d := s.DataCapture; d != nil && o.known(servingDataCapturePath) {
		add("data_capture.destination_s3_uri", residency.KindS3URI, d.DestinationS3URI)
		addKey("data_capture.kms_key_arn", d.KMSKeyARN)
	}
	return refs
}

// ServingVolumeKeyNote says, where customer managed keys are required, why
// an endpoint with a variant on local instance storage has no kms_key_arn:
// a warning on kms_key_arn, so the plan tells a reviewer that the key rule
// was not skipped but does not apply. None when a key is set (an error of
// ValidateServingEndpoint) or the variants are not known yet.
func ServingVolumeKeyNote(s ServingEndpointSpec, unknown []string, requireCMK bool) []Problem {
	o := unknownPaths(unknown)
	i, _ := servingLocalStorageVariant(s, o)
	if !requireCMK || i < 0 || s.KMSKeyARN != "" || !o.known("kms_key_arn") {
		return nil
	}
	return []Problem{{Path: "kms_key_arn", Warning: true, Summary: "No volume key: local instance storage",
		Detail: fmt.Sprintf("variants[%d] (%q) runs on %s, which has local NVMe instance storage: SageMaker encrypts it with a hardware module on the instance (AES-256) and takes no KMS key for it, "+
			"so the rule that requires customer managed keys (%s) does not ask for kms_key_arn here. data_capture.kms_key_arn is still required when data capture is on.",
			i, s.Variants[i].Name, s.Variants[i].InstanceType, residency.RequireCustomerManagedKeysAttr)}}
}

// Guardrail fallback rules: the cases where SageMaker shifts traffic all at
// once although canary or linear routing was asked for.
const (
	GuardrailRuleMultiVariant = "multi-variant rolling"
	GuardrailRuleServerless   = "serverless"
)

// ServingDeploymentWarnings says when the deployment asked for will not be
// the one SageMaker runs: canary and linear traffic shifting work on an
// endpoint with a single instance-based variant; with several variants, or
// serverless ones, SageMaker shifts all traffic at once. Each warning names
// its rule.
func ServingDeploymentWarnings(s ServingEndpointSpec, unknown []string) []Problem {
	o := unknownPaths(unknown)
	r := s.Deployment.routing()
	if r == TrafficAllAtOnce || !o.known(servingVariantsPath) || !o.known(servingDeploymentPath) {
		return nil
	}
	var out []Problem
	for _, v := range s.Variants {
		if v.Serverless != nil {
			out = append(out, Problem{Path: servingDeploymentPath + ".traffic_routing", Warning: true,
				Summary: "Deployment guardrail falls back to all-at-once (rule: " + GuardrailRuleServerless + ")",
				Detail: fmt.Sprintf("traffic_routing = %q is asked for, but variant %q is serverless: SageMaker shifts traffic to a serverless endpoint all at once, "+
					"so an update replaces the whole fleet in one step and rollback alarms act only after it. Set traffic_routing = %q to say so, or use instance variants for %s routing.", r, v.Name, TrafficAllAtOnce, r)})
			return out
		}
	}
	if len(s.Variants) > 1 {
		out = append(out, Problem{Path: servingDeploymentPath + ".traffic_routing", Warning: true,
			Summary: "Deployment guardrail falls back to all-at-once (rule: " + GuardrailRuleMultiVariant + ")",
			Detail: fmt.Sprintf("traffic_routing = %q is asked for, but the endpoint has %d production variants: SageMaker's %s traffic shifting works on single-variant endpoints only, "+
				"so an update shifts every variant's traffic at once. Set traffic_routing = %q to say so, or serve one variant per endpoint.", r, len(s.Variants), r, TrafficAllAtOnce)})
	}
	return out
}
