package platform

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// Feature value types (FeatureDefinition.FeatureType).
const (
	FeatureTypeIntegral   = "Integral"
	FeatureTypeFractional = "Fractional"
	FeatureTypeString     = "String"
)

// Collection types (FeatureDefinition.CollectionType). The empty string is a
// scalar feature.
const (
	CollectionList   = "List"
	CollectionSet    = "Set"
	CollectionVector = "Vector"
)

// Online store storage types.
const (
	StorageStandard = "Standard"
	StorageInMemory = "InMemory"
)

// Offline store table formats.
const (
	TableFormatGlue    = "Glue"
	TableFormatIceberg = "Iceberg"
)

// Throughput modes.
const (
	ThroughputOnDemand    = "OnDemand"
	ThroughputProvisioned = "Provisioned"
)

// Limits of SageMaker Feature Store.
const (
	MaxFeatures                    = 2500
	fsMaxNameLen                   = 64
	fsMaxDescriptionLen            = 128
	fsMaxS3URILen                  = 1024
	FeatureStoreMaxVectorDimension = 8192
	FeatureStoreMaxCapacityUnits   = 10_000_000
	sageMakerMaxTagKeyLen          = 128
	sageMakerMaxTagValueLen        = 256
	fsMaxTTLValue                  = math.MaxInt32
	// FeatureStoreTagPrefix is the tag namespace the provider keeps for
	// itself (the creation token); user tags may not use it.
	FeatureStoreTagPrefix  = "mlplatform:"
	fsMinRoleARNLen        = 20
	fsMaxRoleARNLen        = 2048
	fsMaxKMSKeyLen         = 2048
	featureStoreTagsPath   = "tags"
	featureStoreFeaturesAt = "features"
)

// FeatureTypes, CollectionTypes, StorageTypes, TableFormats, TTLUnits and
// ThroughputModes list the accepted values, for schema validators and docs.
var (
	fsFeatureTypes    = []string{FeatureTypeIntegral, FeatureTypeFractional, FeatureTypeString}
	fsCollectionTypes = []string{CollectionList, CollectionSet, CollectionVector}
	fsStorageTypes    = []string{StorageStandard, StorageInMemory}
	fsTableFormats    = []string{TableFormatGlue, TableFormatIceberg}
	fsTTLUnits        = []string{"Seconds", "Minutes", "Hours", "Days", "Weeks"}
	fsThroughputModes = []string{ThroughputOnDemand, ThroughputProvisioned}
	// Names the offline store adds as columns of its own.
	fsReservedFeatureNames = []string{"is_deleted", "write_time", "api_invocation_time"}
)

// FeatureTypes returns the feature value types.
func FeatureTypes() []string { return slices.Clone(fsFeatureTypes) }

// CollectionTypes returns the collection types.
func CollectionTypes() []string { return slices.Clone(fsCollectionTypes) }

// StorageTypes returns the online store storage types.
func StorageTypes() []string { return slices.Clone(fsStorageTypes) }

// TableFormats returns the offline store table formats.
func TableFormats() []string { return slices.Clone(fsTableFormats) }

// TTLUnits returns the units of an online store TTL.
func TTLUnits() []string { return slices.Clone(fsTTLUnits) }

// ThroughputModes returns the throughput modes.
func ThroughputModes() []string { return slices.Clone(fsThroughputModes) }

// ReservedFeatureNames returns the names a feature may not have.
func ReservedFeatureNames() []string { return slices.Clone(fsReservedFeatureNames) }

// The name rules of SageMaker: start with an alphanumeric character; then
// alphanumerics, hyphens and underscores, never ending in - or _.
var (
	fsNameRE     = lazyRegexp(`^[a-zA-Z0-9]([-_]*[a-zA-Z0-9])*$`)
	fsS3URIRE    = lazyRegexp(`^(https|s3)://([^/]+)/?(.*)$`)
	iamRoleARNRE = lazyRegexp(`^arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$`)
	fsKMSARNRE   = lazyRegexp(`^arn:aws[a-z\-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)/[a-zA-Z0-9:/_-]+$`)
)

// FeatureStoreSpec is a SageMaker feature group as declared: what both front
// ends translate their input to.
type FeatureStoreSpec struct {
	Name             string
	Description      string
	RecordIdentifier string // name of the feature that identifies a record
	EventTime        string // name of the feature that holds the event time
	Features         []Feature
	Online           *OnlineStore // nil: no online store
	Offline          *OfflineStore
	Throughput       *Throughput // nil: the service default (on demand)
	RoleARN          string
	Tags             map[string]string // the resource's own tags, before default tags
}

// Feature is one feature definition.
type Feature struct {
	Name            string
	Type            string // Integral, Fractional or String
	CollectionType  string // empty (scalar), List, Set or Vector
	VectorDimension int64  // Vector only
}

// OnlineStore is the low-latency store.
type OnlineStore struct {
	Enabled     bool
	StorageType string // Standard (default) or InMemory
	KMSKeyARN   string
	TTL         *TTL
}

// TTL is the online store's time to live: records expire this long after
// their event time.
type TTL struct {
	Unit  string // Seconds, Minutes, Hours, Days or Weeks
	Value int64  // 1 to MaxInt32 (SageMaker's Integer)
}

// OfflineStore is the historical store: S3 plus a Glue or Iceberg table.
type OfflineStore struct {
	S3URI                    string
	KMSKeyARN                string
	TableFormat              string // Glue (default) or Iceberg
	DisableGlueTableCreation bool
}

// Throughput is the read and write capacity of the feature group.
type Throughput struct {
	Mode               string // OnDemand or Provisioned
	ReadCapacityUnits  int64  // Provisioned only
	WriteCapacityUnits int64  // Provisioned only
}

// FeatureStore is a feature group as it exists in AWS.
type FeatureStore struct {
	Spec FeatureStoreSpec // as observed; Tags are all the group's tags

	ARN                string
	Status             string // Creating, Created, CreateFailed, Deleting, DeleteFailed
	FailureReason      string
	LastUpdateStatus   string // Successful, Failed, InProgress; empty before any update
	OfflineStoreStatus string // Active, Blocked, Disabled
	TableName          string // offline store Glue table
	DatabaseName       string // offline store Glue database
	Catalog            string // offline store data catalog
	ResolvedS3URI      string // where offline records are written
	CreationTime       time.Time
	// CreationToken is the FeatureStoreTokenTag the provider wrote when it
	// created the group: proof that it did. Empty for a group created
	// elsewhere (imported).
	CreationToken string
}

// storageType returns the effective storage type.
func (o *OnlineStore) storageType() string {
	if o == nil || o.StorageType == "" {
		return StorageStandard
	}
	return o.StorageType
}

// tableFormat returns the effective table format.
func (o *OfflineStore) tableFormat() string {
	if o == nil || o.TableFormat == "" {
		return TableFormatGlue
	}
	return o.TableFormat
}

// Feature returns the feature named name (compared case-insensitively, as the
// offline store's table does) and whether there is one.
func (s *FeatureStoreSpec) Feature(name string) (Feature, bool) {
	for _, f := range s.Features {
		if strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return Feature{}, false
}

// unknownPaths lists attribute paths whose values are not known yet (at
// plan time, values computed by other resources). Rules that read them are
// skipped; a path covers everything beneath it (features covers
// features[0].name).
type unknownPaths []string

func (u unknownPaths) known(paths ...string) bool {
	for _, p := range paths {
		for _, x := range u {
			if p == x || strings.HasPrefix(p, x+".") || strings.HasPrefix(p, x+"[") ||
				strings.HasPrefix(x, p+".") || strings.HasPrefix(x, p+"[") {
				return false
			}
		}
	}
	return true
}

// ValidateFeatureStore checks a spec against the rules of SageMaker Feature
// Store before anything is called: names, types, the record identifier and
// event time, store settings and limits. It returns every problem found, each
// on its attribute path, in a stable order; none means valid.
func ValidateFeatureStore(s FeatureStoreSpec, unknown []string) []Problem {
	v := &validator{unknown: unknownPaths(unknown)}
	v.name(s)
	v.features(s)
	v.identity(s, "record_identifier_feature_name", s.RecordIdentifier, []string{FeatureTypeIntegral, FeatureTypeString}, "record identifier")
	v.identity(s, "event_time_feature_name", s.EventTime, []string{FeatureTypeFractional, FeatureTypeString}, "event time")
	if v.unknown.known("record_identifier_feature_name", "event_time_feature_name") && s.RecordIdentifier != "" && strings.EqualFold(s.RecordIdentifier, s.EventTime) {
		v.add("event_time_feature_name", "the event time feature must differ from the record identifier feature %q", s.RecordIdentifier)
	}
	v.online(s)
	v.offline(s)
	v.throughput(s)
	v.role(s)
	v.tags(s)
	return v.errs
}

// validator collects the problems of a feature store or serving endpoint spec,
// skipping the rules that read values not known yet.
type validator struct {
	unknown unknownPaths
	errs    []Problem
}

func (v *validator) add(path, format string, args ...any) {
	if !v.unknown.known(path) {
		return
	}
	v.errs = append(v.errs, Problem{Path: path, Detail: fmt.Sprintf(format, args...)})
}

// fsNameProblem says what is wrong with a feature or group name, or "".
func fsNameProblem(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > fsMaxNameLen:
		return fmt.Sprintf("is %d characters long; at most %d are allowed", len(name), fsMaxNameLen)
	case !fsNameRE().MatchString(name):
		return "must start and end with a letter or digit and contain only letters, digits, hyphens (-) and underscores (_)"
	}
	return ""
}

func (v *validator) name(s FeatureStoreSpec) {
	if p := fsNameProblem(s.Name); p != "" {
		v.add("name", "feature group name %q %s", s.Name, p)
	}
	// SageMaker counts characters, not bytes: "é" is one.
	if n := utf8.RuneCountInString(s.Description); n > fsMaxDescriptionLen {
		v.add("description", "description is %d characters long; at most %d are allowed", n, fsMaxDescriptionLen)
	}
}

// ValidateFeatures checks feature definitions on their own: names, reserved
// names, duplicates, types, collection types and the count. It is the part of
// ValidateFeatureStore that parses user input, and the fuzz target.
func ValidateFeatures(fs []Feature) []Problem {
	v := &validator{}
	v.featureList(fs)
	return v.errs
}

func (v *validator) features(s FeatureStoreSpec) {
	if !v.unknown.known(featureStoreFeaturesAt) {
		return
	}
	v.featureList(s.Features)
	if !v.unknown.known("online_store") {
		return
	}
	inMemory := s.Online != nil && s.Online.Enabled && s.Online.storageType() == StorageInMemory
	for i, f := range s.Features {
		if f.CollectionType != "" && !inMemory {
			v.add(fmt.Sprintf("features[%d].collection_type", i),
				"feature %q has collection type %s, which needs an enabled online store with storage_type = %q", f.Name, f.CollectionType, StorageInMemory)
		}
	}
}

func (v *validator) featureList(fs []Feature) {
	if len(fs) == 0 {
		v.add(featureStoreFeaturesAt, "a feature group needs at least one feature (and the record identifier and event time features among them)")
		return
	}
	if len(fs) > MaxFeatures {
		v.add(featureStoreFeaturesAt, "%d features declared; a feature group holds at most %d", len(fs), MaxFeatures)
	}
	seen := map[string]int{}
	for i, f := range fs {
		at := fmt.Sprintf("features[%d]", i)
		if p := fsNameProblem(f.Name); p != "" {
			v.add(at+".name", "feature name %q %s", f.Name, p)
		} else if slices.Contains(fsReservedFeatureNames, strings.ToLower(f.Name)) {
			v.add(at+".name", "feature name %q is reserved: the offline store adds the columns %s itself; rename the feature",
				f.Name, strings.Join(fsReservedFeatureNames, ", "))
		}
		if f.Name != "" {
			key := strings.ToLower(f.Name)
			if j, dup := seen[key]; dup {
				v.add(at+".name", "feature name %q duplicates features[%d] (%q); names are compared case-insensitively because the offline store's table columns are", f.Name, j, fs[j].Name)
			} else {
				seen[key] = i
			}
		}
		if !slices.Contains(fsFeatureTypes, f.Type) {
			v.add(at+".type", "feature %q has type %q; use one of %s", f.Name, f.Type, strings.Join(fsFeatureTypes, ", "))
		}
		switch f.CollectionType {
		case "":
		case CollectionList, CollectionSet:
		case CollectionVector:
			if f.Type != FeatureTypeFractional && slices.Contains(fsFeatureTypes, f.Type) {
				v.add(at+".type", "feature %q is a Vector, whose elements must be %s, not %s", f.Name, FeatureTypeFractional, f.Type)
			}
			if f.VectorDimension < 1 || f.VectorDimension > FeatureStoreMaxVectorDimension {
				v.add(at+".vector_dimension", "feature %q is a Vector and needs vector_dimension between 1 and %d (got %d)", f.Name, FeatureStoreMaxVectorDimension, f.VectorDimension)
			}
		default:
			v.add(at+".collection_type", "feature %q has collection type %q; use one of %s, or leave it unset for a scalar", f.Name, f.CollectionType, strings.Join(fsCollectionTypes, ", "))
		}
		if f.CollectionType != CollectionVector && f.VectorDimension != 0 {
			v.add(at+".vector_dimension", "feature %q sets vector_dimension, which applies only to collection_type = %q", f.Name, CollectionVector)
		}
	}
}

// identity checks that the record identifier or event time names a scalar
// feature of an allowed type.
func (v *validator) identity(s FeatureStoreSpec, path, name string, allowed []string, what string) {
	if !v.unknown.known(path) {
		return
	}
	if name == "" {
		v.add(path, "the %s feature name must be set", what)
		return
	}
	if !v.unknown.known(featureStoreFeaturesAt) {
		return
	}
	f, ok := s.Feature(name)
	if !ok {
		v.add(path, "the %s feature %q is not among the features; declare it in features (type %s)", what, name, strings.Join(allowed, " or "))
		return
	}
	if f.CollectionType != "" {
		v.add(path, "the %s feature %q is a %s collection; it must be a scalar", what, name, f.CollectionType)
	}
	if !slices.Contains(allowed, f.Type) {
		v.add(path, "the %s feature %q has type %s; it must be %s", what, name, f.Type, strings.Join(allowed, " or "))
	}
}

func (v *validator) kmsKey(path, arn string) {
	if arn == "" {
		return
	}
	if len(arn) > fsMaxKMSKeyLen || !fsKMSARNRE().MatchString(arn) {
		v.add(path, "%q is not a KMS key ARN; give the full ARN (arn:aws:kms:REGION:ACCOUNT:key/ID) so that the key's region can be checked", arn)
	}
}

func (v *validator) online(s FeatureStoreSpec) {
	o := s.Online
	if o == nil {
		return
	}
	if o.StorageType != "" && !slices.Contains(fsStorageTypes, o.StorageType) {
		v.add("online_store.storage_type", "storage type %q; use one of %s", o.StorageType, strings.Join(fsStorageTypes, ", "))
	}
	v.kmsKey("online_store.kms_key_arn", o.KMSKeyARN)
	if t := o.TTL; t != nil {
		if !slices.Contains(fsTTLUnits, t.Unit) {
			v.add("online_store.ttl.unit", "TTL unit %q; use one of %s", t.Unit, strings.Join(fsTTLUnits, ", "))
		}
		if t.Value < 1 || t.Value > fsMaxTTLValue {
			v.add("online_store.ttl.value", "TTL value must be between 1 and %d (got %d)", fsMaxTTLValue, t.Value)
		}
	}
	if !o.Enabled && (o.KMSKeyARN != "" || o.TTL != nil || o.StorageType != "") {
		v.add("online_store.enabled", "the online store is disabled but storage_type, kms_key_arn or ttl is set; set enabled = true or remove them")
	}
}

func (v *validator) offline(s FeatureStoreSpec) {
	o := s.Offline
	if o == nil {
		if v.unknown.known("online_store", "offline_store") && (s.Online == nil || !s.Online.Enabled) {
			v.add("offline_store", "a feature group needs an online store, an offline store or both; declare offline_store or enable online_store")
		}
		return
	}
	switch {
	case o.S3URI == "":
		v.add("offline_store.s3_uri", "the offline store needs an S3 URI (s3://bucket/prefix)")
	case len(o.S3URI) > fsMaxS3URILen:
		v.add("offline_store.s3_uri", "the S3 URI is %d characters long; at most %d are allowed", len(o.S3URI), fsMaxS3URILen)
	case !fsS3URIRE().MatchString(o.S3URI):
		v.add("offline_store.s3_uri", "%q is not an S3 URI; write s3://bucket/prefix", o.S3URI)
	}
	v.kmsKey("offline_store.kms_key_arn", o.KMSKeyARN)
	if o.TableFormat != "" && !slices.Contains(fsTableFormats, o.TableFormat) {
		v.add("offline_store.table_format", "table format %q; use one of %s", o.TableFormat, strings.Join(fsTableFormats, ", "))
	}
	if o.TableFormat == TableFormatIceberg && o.DisableGlueTableCreation {
		v.add("offline_store.disable_glue_table_creation", "the Iceberg table format needs the Glue table to be created; set disable_glue_table_creation = false or use table_format = %q", TableFormatGlue)
	}
}

func (v *validator) throughput(s FeatureStoreSpec) {
	t := s.Throughput
	if t == nil {
		return
	}
	switch t.Mode {
	case ThroughputOnDemand:
		if t.ReadCapacityUnits != 0 || t.WriteCapacityUnits != 0 {
			v.add("throughput.mode", "capacity units apply only to mode = %q; remove them for on-demand throughput", ThroughputProvisioned)
		}
	case ThroughputProvisioned:
		if t.WriteCapacityUnits < 1 || t.WriteCapacityUnits > FeatureStoreMaxCapacityUnits {
			v.add("throughput.write_capacity_units", "provisioned throughput needs write_capacity_units between 1 and %d (got %d)", FeatureStoreMaxCapacityUnits, t.WriteCapacityUnits)
		}
		switch {
		case v.unknown.known("online_store") && s.Online != nil && s.Online.Enabled && (t.ReadCapacityUnits < 1 || t.ReadCapacityUnits > FeatureStoreMaxCapacityUnits):
			v.add("throughput.read_capacity_units", "provisioned throughput with an online store needs read_capacity_units between 1 and %d (got %d)", FeatureStoreMaxCapacityUnits, t.ReadCapacityUnits)
		case t.ReadCapacityUnits < 0 || t.ReadCapacityUnits > FeatureStoreMaxCapacityUnits:
			v.add("throughput.read_capacity_units", "read_capacity_units must be between 1 and %d (got %d)", FeatureStoreMaxCapacityUnits, t.ReadCapacityUnits)
		}
	default:
		v.add("throughput.mode", "throughput mode %q; use one of %s", t.Mode, strings.Join(fsThroughputModes, ", "))
	}
}

func (v *validator) role(s FeatureStoreSpec) {
	if s.RoleARN == "" {
		if s.Offline != nil && v.unknown.known("offline_store") {
			v.add("role_arn", "the offline store needs role_arn: the IAM role SageMaker assumes to write to the offline store's bucket")
		}
		return
	}
	if len(s.RoleARN) < fsMinRoleARNLen || len(s.RoleARN) > fsMaxRoleARNLen || !iamRoleARNRE().MatchString(s.RoleARN) {
		v.add("role_arn", "%q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", s.RoleARN)
	}
}

func (v *validator) tags(s FeatureStoreSpec) {
	keys := make([]string, 0, len(s.Tags))
	for k := range s.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		at := fmt.Sprintf("tags[%q]", k)
		switch {
		case k == "" || len(k) > sageMakerMaxTagKeyLen:
			v.add(featureStoreTagsPath, "tag key %q must be 1 to %d characters long", k, sageMakerMaxTagKeyLen)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			v.add(at, "tag key %q uses the reserved prefix aws:", k)
		case strings.HasPrefix(strings.ToLower(k), FeatureStoreTagPrefix):
			v.add(at, "tag key %q uses the prefix %s, which the provider keeps for its own tags (the creation token that proves which feature group it created); rename the tag", k, FeatureStoreTagPrefix)
		case len(s.Tags[k]) > sageMakerMaxTagValueLen:
			v.add(at, "tag %q has a value of %d characters; at most %d are allowed", k, len(s.Tags[k]), sageMakerMaxTagValueLen)
		}
	}
}

// FeatureStoreResidencyRefs lists the locations a spec refers to, for the
// residency engine: the offline store bucket, both KMS keys and the role.
// Paths in unknown (see ValidateOptions) are left out: check them again once
// known, before anything is written.
func FeatureStoreResidencyRefs(s FeatureStoreSpec, unknown []string) []residency.Ref {
	o := unknownPaths(unknown)
	var refs []residency.Ref
	add := func(path string, kind residency.Kind, value string) {
		if value != "" && o.known(path) {
			refs = append(refs, residency.Ref{Path: path, Kind: kind, Value: value})
		}
	}
	// An unset key means the AWS managed default key: residency.KeyRef.
	addKey := func(path, value string) {
		if o.known(path) {
			refs = append(refs, residency.KeyRef(path, value))
		}
	}
	if s.Offline != nil {
		add("offline_store.s3_uri", residency.KindS3URI, s.Offline.S3URI)
		addKey("offline_store.kms_key_arn", s.Offline.KMSKeyARN)
	}
	if s.Online != nil && s.Online.Enabled {
		addKey("online_store.kms_key_arn", s.Online.KMSKeyARN)
	}
	add("role_arn", residency.KindARN, s.RoleARN)
	return refs
}

// FeatureStoreTagsPath is the attribute path of a feature store's tags, for
// the required-tag rule.
const FeatureStoreTagsPath = featureStoreTagsPath
