package platform

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// FeatureStoreDeclared is a feature store as the front end holds it before a
// read: the spec last declared (or planned), and which optional attributes
// the user left unset. A value equal to the service default may be written
// out by the user or left unset, and the read must give it back the same
// way, or every refresh would show a change.
type FeatureStoreDeclared struct {
	Spec FeatureStoreSpec
	// Unset lists the optional attribute paths that are null: description,
	// role_arn, online_store, online_store.storage_type,
	// online_store.kms_key_arn, offline_store.kms_key_arn,
	// offline_store.table_format, offline_store.disable_glue_table_creation,
	// throughput, tags. An unset block leaves its attributes unset. An
	// import declares nothing: every path is unset.
	Unset []string
}

// unset reports whether path, or the block that holds it, is unset.
func (d FeatureStoreDeclared) unset(path string) bool {
	for _, u := range d.Unset {
		if path == u || strings.HasPrefix(path, u+".") {
			return true
		}
	}
	return false
}

// FeatureStoreReadBack is what exists, in the shape the user declared it:
// what both front ends write into their state after a create, update or
// refresh.
type FeatureStoreReadBack struct {
	// Spec is what exists: features in the declared order, the declared
	// spelling of the offline store's S3 URI, tags without the default tags
	// the user did not set.
	Spec FeatureStoreSpec
	// Unset lists the optional attribute paths to leave null (unset in the
	// declaration and at their default in AWS), as FeatureStoreDeclared.Unset.
	Unset []string
	// TagsAll is every tag the group carries: own tags over default tags.
	TagsAll map[string]string

	ARN                  string
	Status               string
	FailureReason        string
	CreationTime         string // RFC 3339, UTC; "" when AWS does not say
	OfflineTableName     string
	OfflineDatabaseName  string
	OfflineResolvedS3URI string
}

// IsUnset reports whether the attribute at path is to be left null.
func (r FeatureStoreReadBack) IsUnset(path string) bool { return slices.Contains(r.Unset, path) }

// ReadBackFeatureStore is FeatureStoreReadBackOf under the environment's
// default tags.
func (e *Env) ReadBackFeatureStore(found *FeatureStore, declared FeatureStoreDeclared) FeatureStoreReadBack {
	return FeatureStoreReadBackOf(found, declared, e.DefaultTags)
}

// FeatureStoreReadBackOf puts what AWS says about a group (found) into the
// declared shape, with one set of rules for both front ends:
//   - an optional value the user left unset stays unset where AWS reports
//     its default (description and role "", storage type Standard, table
//     format Glue, Glue table creation not disabled, no keys);
//   - the offline store's S3 URI keeps the declared spelling when AWS adds
//     or drops the trailing slash;
//   - features keep the declared order (a set in Terraform, a list in
//     Pulumi);
//   - what AWS does not report keeps its declared value: the online store
//     (some emulators do not echo it) and the throughput;
//   - tags are the group's tags less the default tags (same value) the user
//     did not set; TagsAll are all of them.
func FeatureStoreReadBackOf(found *FeatureStore, declared FeatureStoreDeclared, defaultTags map[string]string) FeatureStoreReadBack {
	s, prior := found.Spec, declared.Spec
	out := FeatureStoreReadBack{
		ARN:                  found.ARN,
		Status:               found.Status,
		FailureReason:        found.FailureReason,
		OfflineTableName:     found.TableName,
		OfflineDatabaseName:  found.DatabaseName,
		OfflineResolvedS3URI: found.ResolvedS3URI,
		TagsAll:              maps.Clone(s.Tags),
	}
	if !found.CreationTime.IsZero() {
		out.CreationTime = found.CreationTime.UTC().Format(time.RFC3339)
	}
	if out.TagsAll == nil {
		out.TagsAll = map[string]string{}
	}
	keep := func(path, remote, def string) string {
		if remote == def && declared.unset(path) {
			out.Unset = append(out.Unset, path)
		}
		return remote
	}
	rs := FeatureStoreSpec{
		Name:             s.Name,
		Description:      keep("description", s.Description, ""),
		RecordIdentifier: s.RecordIdentifier,
		EventTime:        s.EventTime,
		RoleARN:          keep("role_arn", s.RoleARN, ""),
		Features:         SortFeaturesLike(s.Features, prior.Features),
	}

	switch on := s.Online; {
	case on == nil:
		// Not reported: as declared.
		rs.Online = prior.Online
		if prior.Online == nil {
			out.Unset = append(out.Unset, "online_store")
		}
	case !on.Enabled && declared.unset("online_store"):
		out.Unset = append(out.Unset, "online_store")
	default:
		rs.Online = &OnlineStore{
			Enabled:     on.Enabled,
			StorageType: keep("online_store.storage_type", on.StorageType, StorageStandard),
			KMSKeyARN:   keep("online_store.kms_key_arn", on.KMSKeyARN, ""),
			TTL:         on.TTL,
		}
		if on.TTL == nil {
			out.Unset = append(out.Unset, "online_store.ttl")
		}
		if !on.Enabled {
			// A disabled store has no settings to report.
			rs.Online.StorageType, rs.Online.KMSKeyARN = "", ""
			out.Unset = append(out.Unset, "online_store.storage_type", "online_store.kms_key_arn")
		}
	}

	if off := s.Offline; off == nil {
		out.Unset = append(out.Unset, "offline_store")
	} else {
		uri := off.S3URI
		if p := prior.Offline; p != nil && p.S3URI != "" && strings.TrimSuffix(p.S3URI, "/") == strings.TrimSuffix(uri, "/") {
			uri = p.S3URI
		}
		rs.Offline = &OfflineStore{
			S3URI:                    uri,
			KMSKeyARN:                keep("offline_store.kms_key_arn", off.KMSKeyARN, ""),
			TableFormat:              keep("offline_store.table_format", off.TableFormat, TableFormatGlue),
			DisableGlueTableCreation: off.DisableGlueTableCreation,
		}
		if !off.DisableGlueTableCreation && declared.unset("offline_store.disable_glue_table_creation") {
			out.Unset = append(out.Unset, "offline_store.disable_glue_table_creation")
		}
	}

	// Throughput: as AWS has it; as declared when AWS says nothing.
	rs.Throughput = s.Throughput
	if rs.Throughput == nil {
		rs.Throughput = prior.Throughput
	}
	if rs.Throughput == nil {
		out.Unset = append(out.Unset, "throughput")
	}

	own := map[string]string{}
	for k, v := range s.Tags {
		if dv, isDefault := defaultTags[k]; isDefault && dv == v {
			if _, mine := prior.Tags[k]; !mine {
				continue
			}
		}
		own[k] = v
	}
	rs.Tags = own
	if len(own) == 0 && declared.unset(featureStoreTagsPath) {
		rs.Tags = nil
		out.Unset = append(out.Unset, featureStoreTagsPath)
	}
	out.Spec = rs
	return out
}
