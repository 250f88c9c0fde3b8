package platform

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// PlatformDefaults are the defaults of the UAE ML platform, written once.
// The Pulumi component mlplatform:index:Platform (pulumi/platform.go) takes
// every default it fills in from DefaultPlatform; modules/uae-ml-platform,
// HCL that cannot import Go, declares the same values as its variables'
// defaults, and TestPlatformDefaults_module parses the module and fails on
// any default that differs from these.
//
// A field's `module` tag names what it is the default of in the module: a
// variable of uae-ml-platform (`training_enabled`), or, as
// `<call>.<variable>`, a variable of the module it calls as `<call>` that
// it leaves at that module's default (`features.table_format`). `-` marks a
// default of the component alone; its comment says what the module does.
type PlatformDefaults struct {
	// Name is the module's platform name, the prefix of every resource and
	// the `platform` tag. The component is named by its resource name, so it
	// has no default name.
	Name string `module:"name"`
	// DataClassification is the `data-classification` tag of every
	// resource: one of PlatformDataClassifications.
	DataClassification string `module:"data_classification"`
	// AllowAuditMode accepts a provider whose residency mode is audit
	// (violations only warn). Off: the platform refuses to plan unless the
	// mode is enforce (CheckPlatformPolicy).
	AllowAuditMode bool `module:"allow_audit_mode"`

	// TrainingEnabled creates the GPU training cluster. Off: GPU capacity
	// in me-central-1 is scarce and costly, and a team without GPU quota
	// must not get a cluster of p5en nodes by surprise. The module turns it
	// on with training_enabled = true, the component with a `training`
	// input.
	TrainingEnabled bool `module:"training_enabled"`
	// TrainingInstanceType is the training nodes' type: p5en.48xlarge
	// (8 x H200), offered in me-central-1.
	TrainingInstanceType string `module:"training_instance_type"`
	// TrainingNodeCount is the number of training nodes.
	TrainingNodeCount int `module:"training_node_count"`
	// TrainingZoneID is the training nodes' zone: mec1-az1 (mec1-az2 has
	// been out of service).
	TrainingZoneID string `module:"training_zone_id"`
	// TrainingImage is the training nodes' image: the Deep Learning Base
	// OSS NVIDIA driver AMI (Ubuntu 22.04), which has the NVIDIA driver,
	// Fabric Manager and the EFA software a GPU training node needs; plain
	// Amazon Linux 2023 has none of them.
	TrainingImage string `module:"training_image"`
	// TrainingRootVolumeGiB is the training nodes' root volume in the
	// component. The module leaves volumes to gpu-training-cluster, whose
	// per-family rule gives P types a 500 GiB root volume and a 4000 GiB
	// data volume (G types 200 and 500): that rule is the module's own and
	// not yet one with this value.
	TrainingRootVolumeGiB int `module:"-"`

	// RecordIdentifier is the feature store's record identifier feature
	// (String), added to the features when missing.
	RecordIdentifier string `module:"features.record_identifier"`
	// EventTime is the feature store's event time feature (Fractional),
	// added to the features when missing.
	EventTime string `module:"features.event_time"`
	// OnlineStore gives the feature group an online store.
	OnlineStore bool `module:"features.online_store"`
	// OfflineTableFormat is the offline store's table format: Iceberg
	// (compaction, time travel; SageMaker's own default is Glue).
	OfflineTableFormat string `module:"features.table_format"`
	// AllowDestructiveChanges lets a change replace the feature group.
	AllowDestructiveChanges bool `module:"features.allow_destructive_changes"`

	// The inference footprint and endpoint: the module's for now; the
	// component gains them with a CPU footprint and a serving endpoint.

	// InferenceMinVCPUs is the fewest vCPUs of an inference instance.
	InferenceMinVCPUs int `module:"inference_min_vcpus"`
	// InferenceMinMemoryGiB is the least memory of an inference instance.
	InferenceMinMemoryGiB float64 `module:"inference_min_memory_gib"`
	// InferenceMinSize is the fewest inference instances in working hours.
	InferenceMinSize int `module:"inference_min_size"`
	// InferenceMaxSize is the most inference instances.
	InferenceMaxSize int `module:"inference_max_size"`
	// InferenceDesiredCapacity is the inference instances in working hours.
	InferenceDesiredCapacity int `module:"inference_desired_capacity"`
	// OffHoursSchedule scales inference to zero from 20:00 to 07:00 after
	// each working day (DefaultScheduleTimeZone).
	OffHoursSchedule bool `module:"off_hours_schedule"`
	// InferenceRootVolumeGiB is an inference instance's root volume.
	InferenceRootVolumeGiB int `module:"root_volume_gib"`
}

// DefaultPlatform returns the UAE ML platform's defaults.
func DefaultPlatform() PlatformDefaults {
	return PlatformDefaults{
		Name:               "uae-ml",
		DataClassification: "confidential",
		AllowAuditMode:     false,

		TrainingEnabled:       false,
		TrainingInstanceType:  "p5en.48xlarge",
		TrainingNodeCount:     2,
		TrainingZoneID:        "mec1-az1",
		TrainingImage:         "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
		TrainingRootVolumeGiB: 200,

		RecordIdentifier:        "record_id",
		EventTime:               "event_time",
		OnlineStore:             true,
		OfflineTableFormat:      TableFormatIceberg,
		AllowDestructiveChanges: false,

		InferenceMinVCPUs:        2,
		InferenceMinMemoryGiB:    4,
		InferenceMinSize:         1,
		InferenceMaxSize:         2,
		InferenceDesiredCapacity: 1,
		OffHoursSchedule:         true,
		InferenceRootVolumeGiB:   30,
	}
}

// PlatformJurisdiction is the jurisdiction the platform is built for: its
// zone and image defaults are the UAE's (me-central-1).
const PlatformJurisdiction = "AE"

// The tags the platform puts on every resource, over the caller's tags.
const (
	PlatformTagOwner              = "owner"
	PlatformTagCostCenter         = "cost-center"
	PlatformTagDataClassification = "data-classification"
	PlatformTagPlatform           = "platform"
)

// PlatformTagKeys lists the tags the platform sets on every resource.
func PlatformTagKeys() []string {
	return []string{PlatformTagOwner, PlatformTagCostCenter, PlatformTagDataClassification, PlatformTagPlatform}
}

// PlatformDataClassifications lists the values of the data-classification
// tag, least sensitive first.
func PlatformDataClassifications() []string {
	return []string{"public", "internal", "confidential", "restricted"}
}

// CheckPlatformDataClassification says why c is not a data classification.
func CheckPlatformDataClassification(c string) error {
	if !slices.Contains(PlatformDataClassifications(), c) {
		return fmt.Errorf("data classification %q: use %s", c, strings.Join(PlatformDataClassifications(), ", "))
	}
	return nil
}

// CheckPlatformPolicy refuses a residency policy the platform was not built
// for: another jurisdiction than PlatformJurisdiction, or audit mode
// (violations would only warn) unless allowAuditMode.
func CheckPlatformPolicy(p residency.Policy, allowAuditMode bool) error {
	if p.Jurisdiction.Code != PlatformJurisdiction {
		return fmt.Errorf("the mlplatform provider's residency jurisdiction is %s: this platform expects jurisdiction %s (me-central-1)", p.Jurisdiction.Code, PlatformJurisdiction)
	}
	if p.Mode != residency.ModeEnforce && !allowAuditMode {
		return fmt.Errorf("the mlplatform provider's residency mode is %s: violations would only warn; set mode %s, or allow audit mode while migrating", p.Mode, residency.ModeEnforce)
	}
	return nil
}
