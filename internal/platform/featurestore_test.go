package platform

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/internal/residency"
)

func validFeatureStore() FeatureStoreSpec {
	return FeatureStoreSpec{
		Name:             "customers",
		RecordIdentifier: "customer_id",
		EventTime:        "event_time",
		Features: []Feature{
			{Name: "customer_id", Type: FeatureTypeString},
			{Name: "event_time", Type: FeatureTypeFractional},
			{Name: "age", Type: FeatureTypeIntegral},
		},
		Online:  &OnlineStore{Enabled: true, KMSKeyARN: "arn:aws:kms:me-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab", TTL: &TTL{Unit: "Days", Value: 30}},
		Offline: &OfflineStore{S3URI: "s3://features-uae/customers", KMSKeyARN: "arn:aws:kms:me-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"},
		RoleARN: "arn:aws:iam::123456789012:role/feature-store",
		Tags:    map[string]string{"team": "risk"},
	}
}

func TestValidateFeatureStore(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*FeatureStoreSpec)
		opts    []string
		path    string // "" = valid
		contain string
	}{
		{name: "valid", mutate: func(*FeatureStoreSpec) {}},
		{name: "offline only", mutate: func(s *FeatureStoreSpec) { s.Online = nil }},
		{name: "online only, no role", mutate: func(s *FeatureStoreSpec) { s.Offline, s.RoleARN = nil, "" }},
		{name: "bad group name", mutate: func(s *FeatureStoreSpec) { s.Name = "my group" }, path: "name", contain: "letters, digits"},
		{name: "group name too long", mutate: func(s *FeatureStoreSpec) { s.Name = strings.Repeat("a", 65) }, path: "name", contain: "at most 64"},
		{name: "name ends in hyphen", mutate: func(s *FeatureStoreSpec) { s.Name = "abc-" }, path: "name"},
		{name: "description too long", mutate: func(s *FeatureStoreSpec) { s.Description = strings.Repeat("d", 129) }, path: "description"},
		{name: "description of 128 two-byte characters", mutate: func(s *FeatureStoreSpec) { s.Description = strings.Repeat("é", 128) }},
		{name: "description of 129 characters", mutate: func(s *FeatureStoreSpec) { s.Description = strings.Repeat("é", 129) }, path: "description", contain: "129 characters"},
		{name: "TTL beyond 32 bits", mutate: func(s *FeatureStoreSpec) { s.Online.TTL.Value = 4294967297 }, path: "online_store.ttl.value", contain: "got 4294967297"},
		{name: "TTL at the 32-bit limit", mutate: func(s *FeatureStoreSpec) { s.Online.TTL.Value = 2147483647 }},
		{name: "vector dimension beyond 32 bits", mutate: func(s *FeatureStoreSpec) {
			s.Online.StorageType = StorageInMemory
			s.Online.KMSKeyARN = ""
			s.Features = append(s.Features, Feature{Name: "emb", Type: FeatureTypeFractional, CollectionType: CollectionVector, VectorDimension: 1<<32 + 4})
		}, path: "features[3].vector_dimension"},
		{name: "read units beyond 32 bits without online store", mutate: func(s *FeatureStoreSpec) {
			s.Online = nil
			s.Throughput = &Throughput{Mode: ThroughputProvisioned, ReadCapacityUnits: 1<<32 + 5, WriteCapacityUnits: 5}
		}, path: "throughput.read_capacity_units"},
		{name: "provider's tag namespace", mutate: func(s *FeatureStoreSpec) { s.Tags = map[string]string{"mlplatform:creation-token": "x"} }, path: `tags["mlplatform:creation-token"]`, contain: "keeps for its own"},
		{name: "no features", mutate: func(s *FeatureStoreSpec) { s.Features = nil }, path: "features", contain: "at least one"},
		{name: "too many features", mutate: func(s *FeatureStoreSpec) {
			for i := len(s.Features); i <= MaxFeatures; i++ {
				s.Features = append(s.Features, Feature{Name: fmt.Sprintf("f%d", i), Type: FeatureTypeIntegral})
			}
		}, path: "features", contain: "at most 2500"},
		{name: "2500 features", mutate: func(s *FeatureStoreSpec) {
			for i := len(s.Features); i < MaxFeatures; i++ {
				s.Features = append(s.Features, Feature{Name: fmt.Sprintf("f%d", i), Type: FeatureTypeIntegral})
			}
		}},
		{name: "reserved name", mutate: func(s *FeatureStoreSpec) { s.Features[2].Name = "Write_Time" }, path: "features[2].name", contain: "reserved"},
		{name: "bad feature name", mutate: func(s *FeatureStoreSpec) { s.Features[2].Name = "_age" }, path: "features[2].name"},
		{name: "empty feature name", mutate: func(s *FeatureStoreSpec) { s.Features[2].Name = "" }, path: "features[2].name", contain: "empty"},
		{name: "duplicate ignoring case", mutate: func(s *FeatureStoreSpec) { s.Features[2].Name = "Customer_ID" }, path: "features[2].name", contain: "duplicates features[0]"},
		{name: "bad type", mutate: func(s *FeatureStoreSpec) { s.Features[2].Type = "Boolean" }, path: "features[2].type", contain: "Integral, Fractional, String"},
		{name: "bad collection", mutate: func(s *FeatureStoreSpec) { s.Features[2].CollectionType = "Map" }, path: "features[2].collection_type"},
		{name: "collection needs InMemory", mutate: func(s *FeatureStoreSpec) { s.Features[2].CollectionType = CollectionList }, path: "features[2].collection_type", contain: "InMemory"},
		{name: "collection with InMemory", mutate: func(s *FeatureStoreSpec) {
			s.Features[2].CollectionType = CollectionList
			s.Online.StorageType = StorageInMemory
		}},
		{name: "vector needs dimension", mutate: func(s *FeatureStoreSpec) {
			s.Online.StorageType = StorageInMemory
			s.Features[2] = Feature{Name: "embedding", Type: FeatureTypeFractional, CollectionType: CollectionVector}
		}, path: "features[2].vector_dimension"},
		{name: "vector of integers", mutate: func(s *FeatureStoreSpec) {
			s.Online.StorageType = StorageInMemory
			s.Features[2] = Feature{Name: "embedding", Type: FeatureTypeIntegral, CollectionType: CollectionVector, VectorDimension: 8}
		}, path: "features[2].type", contain: "Fractional"},
		{name: "dimension without vector", mutate: func(s *FeatureStoreSpec) { s.Features[2].VectorDimension = 3 }, path: "features[2].vector_dimension"},
		{name: "record identifier missing", mutate: func(s *FeatureStoreSpec) { s.RecordIdentifier = "" }, path: "record_identifier_feature_name", contain: "must be set"},
		{name: "record identifier not a feature", mutate: func(s *FeatureStoreSpec) { s.RecordIdentifier = "id" }, path: "record_identifier_feature_name", contain: "not among the features"},
		{name: "record identifier fractional", mutate: func(s *FeatureStoreSpec) { s.Features[0].Type = FeatureTypeFractional }, path: "record_identifier_feature_name", contain: "Integral or String"},
		{name: "event time integral", mutate: func(s *FeatureStoreSpec) { s.Features[1].Type = FeatureTypeIntegral }, path: "event_time_feature_name", contain: "Fractional or String"},
		{name: "event time is record id", mutate: func(s *FeatureStoreSpec) { s.EventTime = "customer_id" }, path: "event_time_feature_name", contain: "differ"},
		{name: "event time collection", mutate: func(s *FeatureStoreSpec) {
			s.Online.StorageType = StorageInMemory
			s.Features[1].CollectionType = CollectionList
		}, path: "event_time_feature_name", contain: "scalar"},
		{name: "no store", mutate: func(s *FeatureStoreSpec) { s.Online, s.Offline = nil, nil }, path: "offline_store", contain: "online store, an offline store or both"},
		{name: "online disabled but configured", mutate: func(s *FeatureStoreSpec) { s.Online.Enabled = false }, path: "online_store.enabled"},
		{name: "bad storage type", mutate: func(s *FeatureStoreSpec) { s.Online.StorageType = "Disk" }, path: "online_store.storage_type"},
		{name: "bad ttl unit", mutate: func(s *FeatureStoreSpec) { s.Online.TTL.Unit = "Months" }, path: "online_store.ttl.unit"},
		{name: "zero ttl", mutate: func(s *FeatureStoreSpec) { s.Online.TTL.Value = 0 }, path: "online_store.ttl.value"},
		{name: "kms key id not arn", mutate: func(s *FeatureStoreSpec) { s.Offline.KMSKeyARN = "1234abcd" }, path: "offline_store.kms_key_arn", contain: "not a KMS key ARN"},
		{name: "s3 uri", mutate: func(s *FeatureStoreSpec) { s.Offline.S3URI = "bucket/prefix" }, path: "offline_store.s3_uri"},
		{name: "s3 uri empty", mutate: func(s *FeatureStoreSpec) { s.Offline.S3URI = "" }, path: "offline_store.s3_uri"},
		{name: "table format", mutate: func(s *FeatureStoreSpec) { s.Offline.TableFormat = "Delta" }, path: "offline_store.table_format"},
		{name: "iceberg without glue", mutate: func(s *FeatureStoreSpec) {
			s.Offline.TableFormat, s.Offline.DisableGlueTableCreation = TableFormatIceberg, true
		}, path: "offline_store.disable_glue_table_creation"},
		{name: "offline without role", mutate: func(s *FeatureStoreSpec) { s.RoleARN = "" }, path: "role_arn", contain: "needs role_arn"},
		{name: "role not iam", mutate: func(s *FeatureStoreSpec) { s.RoleARN = "arn:aws:s3:::bucket-name-here" }, path: "role_arn"},
		{name: "throughput mode", mutate: func(s *FeatureStoreSpec) { s.Throughput = &Throughput{Mode: "Burst"} }, path: "throughput.mode"},
		{name: "on demand with units", mutate: func(s *FeatureStoreSpec) { s.Throughput = &Throughput{Mode: ThroughputOnDemand, ReadCapacityUnits: 5} }, path: "throughput.mode"},
		{name: "provisioned needs write", mutate: func(s *FeatureStoreSpec) {
			s.Throughput = &Throughput{Mode: ThroughputProvisioned, ReadCapacityUnits: 5}
		}, path: "throughput.write_capacity_units"},
		{name: "provisioned needs read with online", mutate: func(s *FeatureStoreSpec) {
			s.Throughput = &Throughput{Mode: ThroughputProvisioned, WriteCapacityUnits: 5}
		}, path: "throughput.read_capacity_units"},
		{name: "provisioned", mutate: func(s *FeatureStoreSpec) {
			s.Throughput = &Throughput{Mode: ThroughputProvisioned, ReadCapacityUnits: 10, WriteCapacityUnits: 5}
		}},
		{name: "aws tag", mutate: func(s *FeatureStoreSpec) { s.Tags["aws:owner"] = "x" }, path: `tags["aws:owner"]`},
		// Unknown values at plan time are not judged.
		{name: "unknown features skip identity checks", mutate: func(s *FeatureStoreSpec) { s.Features = nil }, opts: []string{"features"}},
		{name: "unknown role", mutate: func(s *FeatureStoreSpec) { s.RoleARN = "" }, opts: []string{"role_arn"}},
		{name: "unknown feature name", mutate: func(s *FeatureStoreSpec) { s.Features[2].Name = "" }, opts: []string{"features[2].name"}},
		{name: "unknown s3 uri", mutate: func(s *FeatureStoreSpec) { s.Offline.S3URI = "" }, opts: []string{"offline_store.s3_uri"}},
		{name: "unknown record id", mutate: func(s *FeatureStoreSpec) { s.RecordIdentifier = "" }, opts: []string{"record_identifier_feature_name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validFeatureStore()
			tt.mutate(&s)
			errs := ValidateFeatureStore(s, tt.opts)
			if tt.path == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Path == tt.path && strings.Contains(e.Detail, tt.contain) {
					return
				}
			}
			t.Fatalf("want an error on %s containing %q, got %v", tt.path, tt.contain, errs)
		})
	}
}

func TestPlanFeatureStoreChange(t *testing.T) {
	tests := []struct {
		name        string
		mutate      func(*FeatureStoreSpec)
		inPlace     []string // paths
		destructive []string
		reason      string // a destructive reason contains this
	}{
		{name: "no change", mutate: func(*FeatureStoreSpec) {}},
		{name: "reorder features", mutate: func(s *FeatureStoreSpec) { slices.Reverse(s.Features) }},
		{name: "add feature", mutate: func(s *FeatureStoreSpec) {
			s.Features = append(s.Features, Feature{Name: "score", Type: FeatureTypeFractional})
		}, inPlace: []string{"features"}},
		{name: "remove feature", mutate: func(s *FeatureStoreSpec) { s.Features = s.Features[:2] },
			destructive: []string{"features"}, reason: `data in the offline store table for "age" will be lost`},
		{name: "retype feature", mutate: func(s *FeatureStoreSpec) { s.Features[2].Type = FeatureTypeString },
			destructive: []string{"features"}, reason: "changes type from Integral to String"},
		{name: "feature becomes list", mutate: func(s *FeatureStoreSpec) { s.Features[2].CollectionType = CollectionList },
			destructive: []string{"features"}, reason: "List of Integral"},
		{name: "rename feature case", mutate: func(s *FeatureStoreSpec) { s.Features[2].Name = "AGE" },
			destructive: []string{"features"}, reason: "renamed"},
		{name: "add and remove", mutate: func(s *FeatureStoreSpec) { s.Features[2] = Feature{Name: "score", Type: FeatureTypeFractional} },
			inPlace: []string{"features"}, destructive: []string{"features"}},
		{name: "ttl", mutate: func(s *FeatureStoreSpec) { s.Online.TTL = &TTL{Unit: "Days", Value: 60} }, inPlace: []string{"online_store.ttl"}},
		{name: "ttl removed", mutate: func(s *FeatureStoreSpec) { s.Online.TTL = nil }, destructive: []string{"online_store.ttl"}, reason: "not remove it"},
		{name: "throughput", mutate: func(s *FeatureStoreSpec) {
			s.Throughput = &Throughput{Mode: ThroughputProvisioned, ReadCapacityUnits: 10, WriteCapacityUnits: 10}
		}, inPlace: []string{"throughput"}},
		{name: "tags", mutate: func(s *FeatureStoreSpec) { s.Tags = map[string]string{"team": "fraud"} }, inPlace: []string{"tags"}},
		{name: "offline s3 uri", mutate: func(s *FeatureStoreSpec) { s.Offline.S3URI = "s3://other/x" }, destructive: []string{"offline_store.s3_uri"}},
		{name: "offline kms", mutate: func(s *FeatureStoreSpec) { s.Offline.KMSKeyARN = "" }, destructive: []string{"offline_store.kms_key_arn"}},
		{name: "offline format", mutate: func(s *FeatureStoreSpec) { s.Offline.TableFormat = TableFormatIceberg }, destructive: []string{"offline_store.table_format"}},
		{name: "offline glue default is Glue", mutate: func(s *FeatureStoreSpec) { s.Offline.TableFormat = TableFormatGlue }},
		{name: "offline removed", mutate: func(s *FeatureStoreSpec) { s.Offline = nil }, destructive: []string{"offline_store"}},
		{name: "online off", mutate: func(s *FeatureStoreSpec) { s.Online = nil }, destructive: []string{"online_store.enabled"}},
		{name: "online storage", mutate: func(s *FeatureStoreSpec) { s.Online.StorageType = StorageInMemory }, destructive: []string{"online_store.storage_type"}},
		{name: "online storage default", mutate: func(s *FeatureStoreSpec) { s.Online.StorageType = StorageStandard }},
		{name: "online kms", mutate: func(s *FeatureStoreSpec) { s.Online.KMSKeyARN = "" }, destructive: []string{"online_store.kms_key_arn"}},
		{name: "record id", mutate: func(s *FeatureStoreSpec) { s.RecordIdentifier = "age" }, destructive: []string{"record_identifier_feature_name"}},
		{name: "event time", mutate: func(s *FeatureStoreSpec) { s.EventTime = "age" }, destructive: []string{"event_time_feature_name"}},
		{name: "role", mutate: func(s *FeatureStoreSpec) { s.RoleARN += "2" }, destructive: []string{"role_arn"}},
		{name: "description", mutate: func(s *FeatureStoreSpec) { s.Description = "x" }, destructive: []string{"description"}},
		{name: "name", mutate: func(s *FeatureStoreSpec) { s.Name = "other" }, destructive: []string{"name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, new := validFeatureStore(), validFeatureStore()
			tt.mutate(&new)
			p := featureStoreChange(old, new)
			gotIn, gotDes := changePaths(p.InPlace), p.DestructivePaths()
			if !slices.Equal(gotIn, tt.inPlace) {
				t.Errorf("in place = %v, want %v", gotIn, tt.inPlace)
			}
			if !slices.Equal(gotDes, tt.destructive) {
				t.Errorf("destructive = %v, want %v (%v)", gotDes, tt.destructive, p.Destructive)
			}
			if tt.reason != "" && !strings.Contains(fmt.Sprint(p.Destructive), tt.reason) {
				t.Errorf("destructive reasons %v lack %q", p.Destructive, tt.reason)
			}
			if p.IsDestructive() != (len(tt.destructive) > 0) || p.Empty() != (len(tt.inPlace)+len(tt.destructive) == 0) {
				t.Errorf("IsDestructive = %v, NoOp = %v", p.IsDestructive(), p.Empty())
			}
			if p.IsDestructive() && !strings.Contains(p.DestructiveSummary(new.Name), "Data will be lost") {
				t.Errorf("summary does not say data will be lost: %s", p.DestructiveSummary(new.Name))
			}
		})
	}
}

func TestPlanFeatureStoreChangeAdditions(t *testing.T) {
	old := validFeatureStore()
	new := validFeatureStore()
	new.Features = append([]Feature{{Name: "score", Type: FeatureTypeFractional}}, new.Features...)
	new.Features = append(new.Features, Feature{Name: "segment", Type: FeatureTypeString})
	new.Online.TTL = &TTL{Unit: "Hours", Value: 12}
	p := featureStoreChange(old, new)
	if got := featureNames(p.Additions); !slices.Equal(got, []string{"score", "segment"}) {
		t.Fatalf("additions = %v", got)
	}
	if p.TTL == nil || *p.TTL != (TTL{Unit: "Hours", Value: 12}) {
		t.Fatalf("TTL = %v", p.TTL)
	}
	u := featureStoreUpdate(p, map[string]string{"a": "b"})
	if len(u.Additions) != 2 || u.TTL == nil || u.TTL.Value != 12 || u.Throughput != nil || u.Tags["a"] != "b" {
		t.Fatalf("update = %+v", u)
	}
}

func TestSortFeaturesLike(t *testing.T) {
	observed := []Feature{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "new"}}
	want := []Feature{{Name: "C"}, {Name: "a"}, {Name: "b"}}
	got := featureNames(SortFeaturesLike(observed, want))
	if !slices.Equal(got, []string{"c", "a", "b", "new"}) {
		t.Fatalf("got %v", got)
	}
}

func TestFeatureStoreResidencyRefs(t *testing.T) {
	s := validFeatureStore()
	refs := FeatureStoreResidencyRefs(s, nil)
	want := []residency.Ref{
		{Path: "offline_store.s3_uri", Kind: residency.KindS3URI, Value: s.Offline.S3URI},
		residency.KeyRef("offline_store.kms_key_arn", s.Offline.KMSKeyARN),
		residency.KeyRef("online_store.kms_key_arn", s.Online.KMSKeyARN),
		{Path: "role_arn", Kind: residency.KindARN, Value: s.RoleARN},
	}
	if !slices.Equal(refs, want) {
		t.Fatalf("refs = %v", refs)
	}
	// An unset key is still a reference: the AWS managed default key, which
	// require_customer_managed_keys refuses.
	noKeys := validFeatureStore()
	noKeys.Offline.KMSKeyARN, noKeys.Online.KMSKeyARN = "", ""
	if refs := FeatureStoreResidencyRefs(noKeys, nil); len(refs) != 4 || !refs[1].DefaultKey || refs[1].Value != "" || !refs[2].DefaultKey {
		t.Fatalf("refs without keys = %v, want both key attributes as default-key references", refs)
	}
	refs = FeatureStoreResidencyRefs(s, []string{"offline_store.s3_uri", "role_arn"})
	if len(refs) != 2 || refs[0].Path != "offline_store.kms_key_arn" {
		t.Fatalf("refs with unknowns = %v", refs)
	}
	if refs := FeatureStoreResidencyRefs(s, []string{"offline_store"}); len(refs) != 2 {
		t.Fatalf("refs with offline store unknown = %v", refs)
	}
}

func TestFeatureGroupConfig(t *testing.T) {
	s := validFeatureStore()
	s.Online.StorageType = ""
	s.Features = append(s.Features, Feature{Name: "embedding", Type: FeatureTypeFractional, CollectionType: CollectionVector, VectorDimension: 4})
	s.Throughput = &Throughput{Mode: ThroughputProvisioned, ReadCapacityUnits: 3, WriteCapacityUnits: 2}
	c := featureGroupConfig(s, map[string]string{"z": "1", "a": "2"})
	if c.Name != "customers" || len(c.Features) != 4 || !c.Online.Enabled || c.Online.StorageType != StorageStandard || c.Online.TTL.Value != 30 ||
		c.Offline.S3URI != s.Offline.S3URI || c.Offline.TableFormat != TableFormatGlue || c.Throughput.ReadCapacityUnits != 3 || c.Tags["a"] != "2" || c.RoleARN != s.RoleARN {
		t.Fatalf("config = %+v", c)
	}
	if c.Features[3].CollectionType != CollectionVector || c.Features[3].VectorDimension != 4 {
		t.Fatalf("vector definition = %+v", c.Features[3])
	}
	s.Throughput = &Throughput{Mode: ThroughputOnDemand}
	if c := featureGroupConfig(s, nil); c.Throughput.ReadCapacityUnits != 0 || c.Throughput.Mode != ThroughputOnDemand {
		t.Fatalf("on-demand throughput = %+v", c.Throughput)
	}
}

func changePaths(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Path)
	}
	return out
}

func featureNames(fs []Feature) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// awsFeatureNameRE is the FeatureName pattern of the SageMaker API model,
// anchored, kept apart from the implementation's.
var awsFeatureNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([-_]*[a-zA-Z0-9]){0,63}$`)

// FuzzValidateFeatures feeds arbitrary feature definitions, one per line as
// name,type,collection,dimension, to the validation. It must never panic, and
// whatever it accepts SageMaker's own rules accept too.
func FuzzValidateFeatures(f *testing.F) {
	f.Add("customer_id,String,,0\nevent_time,Fractional,,0")
	f.Add("embedding,Fractional,Vector,128")
	f.Add("is_deleted,Integral,,0")
	f.Add("a-b_c,Integral,List,0\nA-B_C,String,,0")
	f.Add("_bad,Integral,,0\nbad-,String,Set,3")
	f.Add(strings.Repeat("x", 65) + ",String,,0")
	f.Add("ü,String,,0\n,,,")
	f.Fuzz(func(t *testing.T, in string) {
		var fs []Feature
		for line := range strings.SplitSeq(in, "\n") {
			parts := strings.SplitN(line, ",", 4)
			for len(parts) < 4 {
				parts = append(parts, "")
			}
			var dim int64
			fmt.Sscan(parts[3], &dim)
			fs = append(fs, Feature{Name: parts[0], Type: parts[1], CollectionType: parts[2], VectorDimension: dim})
		}
		errs := ValidateFeatures(fs)
		bad := map[int]bool{}
		for _, e := range errs {
			if e.Detail == "" || e.Path == "" {
				t.Fatalf("empty error %+v", e)
			}
			var i int
			if _, err := fmt.Sscanf(e.Path, "features[%d]", &i); err == nil {
				bad[i] = true
			}
		}
		if len(fs) > MaxFeatures {
			return
		}
		seen := map[string]bool{}
		for i, f := range fs {
			if bad[i] {
				continue
			}
			// Accepted: it must meet SageMaker's rules.
			if !awsFeatureNameRE.MatchString(f.Name) || slices.Contains(ReservedFeatureNames(), strings.ToLower(f.Name)) {
				t.Fatalf("accepted feature name %q", f.Name)
			}
			if !slices.Contains(FeatureTypes(), f.Type) {
				t.Fatalf("accepted feature type %q", f.Type)
			}
			if f.CollectionType != "" && !slices.Contains(CollectionTypes(), f.CollectionType) {
				t.Fatalf("accepted collection type %q", f.CollectionType)
			}
			if f.CollectionType == CollectionVector && (f.VectorDimension < 1 || f.VectorDimension > 8192 || f.Type != FeatureTypeFractional) {
				t.Fatalf("accepted vector %+v", f)
			}
			if seen[strings.ToLower(f.Name)] {
				t.Fatalf("accepted duplicate %q", f.Name)
			}
			seen[strings.ToLower(f.Name)] = true
		}
	})
}

func TestPlanFeatureStoreChangeUnknown(t *testing.T) {
	old := validFeatureStore()
	tests := []struct {
		name        string
		mutate      func(*FeatureStoreSpec)
		unknown     []string
		destructive []string
	}{
		{name: "nothing unknown", mutate: func(*FeatureStoreSpec) {}},
		{name: "unknown role may be replaced", mutate: func(s *FeatureStoreSpec) { s.RoleARN = "" }, unknown: []string{"role_arn"}, destructive: []string{"role_arn"}},
		{name: "unknown s3 uri", mutate: func(s *FeatureStoreSpec) { s.Offline.S3URI = "" }, unknown: []string{"offline_store.s3_uri"}, destructive: []string{"offline_store.s3_uri"}},
		{name: "unknown features", mutate: func(s *FeatureStoreSpec) { s.Features = nil }, unknown: []string{"features"}, destructive: []string{"features"}},
		{name: "unknown feature name", mutate: func(s *FeatureStoreSpec) { s.Features[2].Name = "" }, unknown: []string{"features[2].name"}, destructive: []string{"features"}},
		{name: "unknown tags are in place", mutate: func(s *FeatureStoreSpec) { s.Tags = nil }, unknown: []string{"tags"}},
		{name: "unknown throughput is in place", mutate: func(s *FeatureStoreSpec) { s.Throughput = nil }, unknown: []string{"throughput"}},
		{name: "known destructive change stays", mutate: func(s *FeatureStoreSpec) { s.Description = "x"; s.Tags = nil }, unknown: []string{"tags"}, destructive: []string{"description"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			new := validFeatureStore()
			tt.mutate(&new)
			p := featureStoreChangeUnknown(old, new, tt.unknown)
			if got := p.DestructivePaths(); !slices.Equal(got, tt.destructive) {
				t.Fatalf("destructive = %v, want %v (%v)", got, tt.destructive, p.Destructive)
			}
			for _, c := range p.Destructive {
				if slices.Contains(tt.unknown, c.Path) && !strings.Contains(c.Reason, "not known until apply") {
					t.Errorf("reason %q does not say the value is unknown", c.Reason)
				}
			}
		})
	}
}

func TestFeatureStoreRepair(t *testing.T) {
	tests := []struct {
		status  string
		allow   bool
		want    string // finish, replace, blocked or none
		contain string
	}{
		{FeatureStoreCreated, false, "none", ""},
		{FeatureStoreCreating, false, "finish", ""},
		{"Unknown", false, "finish", ""},
		{FeatureStoreCreateFailed, false, "blocked", "allow_destructive_changes = true"},
		{FeatureStoreCreateFailed, true, "replace", "CreateFailed: bucket denied"},
		{FeatureStoreDeleteFailed, true, "blocked", "DeleteFailed: bucket denied"},
		{FeatureStoreDeleting, false, "blocked", "being deleted"},
	}
	for _, tt := range tests {
		p := FeatureStoreRepair(tt.status, "bucket denied", tt.allow)
		got := "none"
		text := p.Reason
		switch {
		case p.Blocked != "":
			got, text = "blocked", p.Blocked
		case p.Replace:
			got = "replace"
		case p.Finish:
			got = "finish"
		}
		if got != tt.want || !strings.Contains(text, tt.contain) {
			t.Errorf("%s (allow %v): %s %q, want %s containing %q", tt.status, tt.allow, got, text, tt.want, tt.contain)
		}
	}
}
