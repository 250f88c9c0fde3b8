package platform

import (
	"maps"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// featureGroupConfig translates a spec (with tags already merged) to what
// internal/cloud creates, the service's defaults filled in. Numbers were
// validated to fit 32 bits (ValidateFeatureStore).
func featureGroupConfig(s FeatureStoreSpec, tags map[string]string) cloud.FeatureGroupConfig {
	c := cloud.FeatureGroupConfig{
		Name:             s.Name,
		Description:      s.Description,
		RecordIdentifier: s.RecordIdentifier,
		EventTime:        s.EventTime,
		RoleARN:          s.RoleARN,
		Features:         cloudFeatures(s.Features),
		Tags:             maps.Clone(tags),
	}
	if o := s.Online; o != nil {
		c.Online = &cloud.OnlineStoreConfig{Enabled: o.Enabled}
		if o.Enabled {
			c.Online.StorageType = o.storageType()
			c.Online.KMSKeyID = o.KMSKeyARN
			c.Online.TTL = cloudTTL(o.TTL)
		}
	}
	if o := s.Offline; o != nil {
		c.Offline = &cloud.OfflineStoreConfig{S3URI: o.S3URI, KMSKeyID: o.KMSKeyARN, TableFormat: o.tableFormat(), DisableGlueTableCreation: o.DisableGlueTableCreation}
	}
	c.Throughput = cloudThroughput(s.Throughput)
	return c
}

func cloudFeatures(fs []Feature) []cloud.FeatureDefinition {
	if len(fs) == 0 {
		return nil
	}
	out := make([]cloud.FeatureDefinition, 0, len(fs))
	for _, f := range fs {
		out = append(out, cloud.FeatureDefinition{Name: f.Name, Type: f.Type, CollectionType: f.CollectionType, VectorDimension: int32(f.VectorDimension)})
	}
	return out
}

func cloudTTL(t *TTL) *cloud.TTLDuration {
	if t == nil {
		return nil
	}
	return &cloud.TTLDuration{Unit: t.Unit, Value: int32(t.Value)}
}

func cloudThroughput(t *Throughput) *cloud.ThroughputConfig {
	if t == nil {
		return nil
	}
	c := &cloud.ThroughputConfig{Mode: t.Mode}
	if t.Mode == ThroughputProvisioned {
		c.ReadCapacityUnits, c.WriteCapacityUnits = int32(t.ReadCapacityUnits), int32(t.WriteCapacityUnits)
	}
	return c
}

// featureStoreUpdate translates the in-place part of a plan.
func featureStoreUpdate(p FeatureStorePlan, tags map[string]string) cloud.FeatureStoreUpdate {
	u := cloud.FeatureStoreUpdate{Additions: cloudFeatures(p.Additions), TTL: cloudTTL(p.TTL), Throughput: cloudThroughput(p.Throughput)}
	if tags != nil {
		u.Tags = maps.Clone(tags)
	}
	return u
}

// featureStoreFrom translates what AWS says about a group, the service's
// defaults made explicit (storage type Standard, table format Glue).
func featureStoreFrom(fg *cloud.FeatureGroup) *FeatureStore {
	d := fg.Info()
	out := &FeatureStore{
		Spec: FeatureStoreSpec{
			Name:             d.Name,
			Description:      d.Description,
			RecordIdentifier: d.RecordIdentifier,
			EventTime:        d.EventTime,
			RoleARN:          d.RoleARN,
			Tags:             maps.Clone(d.Tags),
		},
		CreationToken:      d.Tags[FeatureStoreTokenTag],
		ARN:                d.ARN,
		Status:             d.Status,
		FailureReason:      d.FailureReason,
		CreationTime:       d.CreationTime,
		LastUpdateStatus:   d.LastUpdateStatus,
		OfflineStoreStatus: d.OfflineStoreStatus,
		TableName:          d.TableName,
		DatabaseName:       d.DatabaseName,
		Catalog:            d.Catalog,
		ResolvedS3URI:      d.ResolvedS3URI,
	}
	if out.Spec.Tags == nil {
		out.Spec.Tags = map[string]string{}
	}
	delete(out.Spec.Tags, FeatureStoreTokenTag)
	for _, f := range d.Features {
		out.Spec.Features = append(out.Spec.Features, Feature{Name: f.Name, Type: f.Type, CollectionType: f.CollectionType, VectorDimension: int64(f.VectorDimension)})
	}
	if o := d.Online; o != nil {
		on := &OnlineStore{Enabled: o.Enabled, StorageType: o.StorageType, KMSKeyARN: o.KMSKeyID}
		if on.StorageType == "" && on.Enabled {
			on.StorageType = StorageStandard
		}
		if t := o.TTL; t != nil {
			on.TTL = &TTL{Unit: t.Unit, Value: int64(t.Value)}
		}
		out.Spec.Online = on
	}
	if o := d.Offline; o != nil {
		off := &OfflineStore{S3URI: o.S3URI, KMSKeyARN: o.KMSKeyID, TableFormat: o.TableFormat, DisableGlueTableCreation: o.DisableGlueTableCreation}
		// SageMaker describes an unset format as "Default": Glue.
		if off.TableFormat == "" || strings.EqualFold(off.TableFormat, "Default") {
			off.TableFormat = TableFormatGlue
		}
		out.Spec.Offline = off
	}
	if t := d.Throughput; t != nil {
		out.Spec.Throughput = &Throughput{Mode: t.Mode, ReadCapacityUnits: int64(t.ReadCapacityUnits), WriteCapacityUnits: int64(t.WriteCapacityUnits)}
	}
	return out
}
