package platform

import (
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// createFeatureGroupInput translates a spec (with tags already merged) to
// the CreateFeatureGroup request.
func createFeatureGroupInput(s FeatureStoreSpec, tags map[string]string) *sagemaker.CreateFeatureGroupInput {
	in := &sagemaker.CreateFeatureGroupInput{
		FeatureGroupName:            aws.String(s.Name),
		RecordIdentifierFeatureName: aws.String(s.RecordIdentifier),
		EventTimeFeatureName:        aws.String(s.EventTime),
		FeatureDefinitions:          featureDefinitions(s.Features),
	}
	if s.Description != "" {
		in.Description = aws.String(s.Description)
	}
	if s.RoleARN != "" {
		in.RoleArn = aws.String(s.RoleARN)
	}
	if o := s.Online; o != nil {
		in.OnlineStoreConfig = &types.OnlineStoreConfig{EnableOnlineStore: aws.Bool(o.Enabled)}
		if o.Enabled {
			in.OnlineStoreConfig.StorageType = types.StorageType(o.storageType())
			if o.KMSKeyARN != "" {
				in.OnlineStoreConfig.SecurityConfig = &types.OnlineStoreSecurityConfig{KmsKeyId: aws.String(o.KMSKeyARN)}
			}
			in.OnlineStoreConfig.TtlDuration = ttlDuration(o.TTL)
		}
	}
	if o := s.Offline; o != nil {
		in.OfflineStoreConfig = &types.OfflineStoreConfig{
			S3StorageConfig:          &types.S3StorageConfig{S3Uri: aws.String(o.S3URI)},
			DisableGlueTableCreation: aws.Bool(o.DisableGlueTableCreation),
			TableFormat:              types.TableFormat(o.tableFormat()),
		}
		if o.KMSKeyARN != "" {
			in.OfflineStoreConfig.S3StorageConfig.KmsKeyId = aws.String(o.KMSKeyARN)
		}
	}
	if t := s.Throughput; t != nil {
		in.ThroughputConfig = &types.ThroughputConfig{ThroughputMode: types.ThroughputMode(t.Mode)}
		if t.Mode == ThroughputProvisioned {
			in.ThroughputConfig.ProvisionedReadCapacityUnits = capacity(t.ReadCapacityUnits)
			in.ThroughputConfig.ProvisionedWriteCapacityUnits = capacity(t.WriteCapacityUnits)
		}
	}
	for _, k := range fsSortedKeys(tags) {
		in.Tags = append(in.Tags, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return in
}

// capacity is n for the API; n was validated to fit (ValidateFeatureStore).
func capacity(n int64) *int32 {
	if n == 0 {
		return nil
	}
	return aws.Int32(int32(n))
}

func featureDefinitions(fs []Feature) []types.FeatureDefinition {
	out := make([]types.FeatureDefinition, 0, len(fs))
	for _, f := range fs {
		d := types.FeatureDefinition{FeatureName: aws.String(f.Name), FeatureType: types.FeatureType(f.Type)}
		if f.CollectionType != "" {
			d.CollectionType = types.CollectionType(f.CollectionType)
		}
		if f.CollectionType == CollectionVector {
			d.CollectionConfig = &types.CollectionConfigMemberVectorConfig{Value: types.VectorConfig{Dimension: aws.Int32(int32(f.VectorDimension))}}
		}
		out = append(out, d)
	}
	return out
}

func ttlDuration(t *TTL) *types.TtlDuration {
	if t == nil {
		return nil
	}
	return &types.TtlDuration{Unit: types.TtlDurationUnit(t.Unit), Value: aws.Int32(int32(t.Value))}
}

// featureStoreUpdate translates the in-place part of a plan.
func featureStoreUpdate(p FeatureStorePlan, tags map[string]string) cloud.FeatureStoreUpdate {
	u := cloud.FeatureStoreUpdate{Additions: nil, TTL: ttlDuration(p.TTL)}
	if len(p.Additions) > 0 {
		u.Additions = featureDefinitions(p.Additions)
	}
	if t := p.Throughput; t != nil {
		u.Throughput = &types.ThroughputConfigUpdate{ThroughputMode: types.ThroughputMode(t.Mode)}
		if t.Mode == ThroughputProvisioned {
			u.Throughput.ProvisionedReadCapacityUnits = capacity(t.ReadCapacityUnits)
			u.Throughput.ProvisionedWriteCapacityUnits = capacity(t.WriteCapacityUnits)
		}
	}
	if tags != nil {
		u.Tags = maps.Clone(tags)
	}
	return u
}

// featureStoreFrom translates what AWS says about a group.
func featureStoreFrom(fg *cloud.FeatureGroup) *FeatureStore {
	d := fg.DescribeFeatureGroupOutput
	out := &FeatureStore{
		Spec: FeatureStoreSpec{
			Name:             aws.ToString(d.FeatureGroupName),
			Description:      aws.ToString(d.Description),
			RecordIdentifier: aws.ToString(d.RecordIdentifierFeatureName),
			EventTime:        aws.ToString(d.EventTimeFeatureName),
			RoleARN:          aws.ToString(d.RoleArn),
			Tags:             maps.Clone(fg.Tags),
		},
		CreationToken: fg.Tags[FeatureStoreTokenTag],
		ARN:           aws.ToString(d.FeatureGroupArn),
		Status:        string(d.FeatureGroupStatus),
		FailureReason: aws.ToString(d.FailureReason),
		CreationTime:  aws.ToTime(d.CreationTime),
	}
	delete(out.Spec.Tags, FeatureStoreTokenTag)
	for _, fd := range d.FeatureDefinitions {
		f := Feature{Name: aws.ToString(fd.FeatureName), Type: string(fd.FeatureType), CollectionType: string(fd.CollectionType)}
		if vc, ok := fd.CollectionConfig.(*types.CollectionConfigMemberVectorConfig); ok {
			f.VectorDimension = int64(aws.ToInt32(vc.Value.Dimension))
		}
		out.Spec.Features = append(out.Spec.Features, f)
	}
	if o := d.OnlineStoreConfig; o != nil {
		on := &OnlineStore{Enabled: aws.ToBool(o.EnableOnlineStore), StorageType: string(o.StorageType)}
		if on.StorageType == "" && on.Enabled {
			on.StorageType = StorageStandard
		}
		if o.SecurityConfig != nil {
			on.KMSKeyARN = aws.ToString(o.SecurityConfig.KmsKeyId)
		}
		if t := o.TtlDuration; t != nil {
			on.TTL = &TTL{Unit: string(t.Unit), Value: int64(aws.ToInt32(t.Value))}
		}
		out.Spec.Online = on
	}
	if o := d.OfflineStoreConfig; o != nil {
		off := &OfflineStore{DisableGlueTableCreation: aws.ToBool(o.DisableGlueTableCreation), TableFormat: string(o.TableFormat)}
		if off.TableFormat == "" || strings.EqualFold(off.TableFormat, string(types.TableFormatDefault)) {
			off.TableFormat = TableFormatGlue
		}
		if s3 := o.S3StorageConfig; s3 != nil {
			off.S3URI = aws.ToString(s3.S3Uri)
			off.KMSKeyARN = aws.ToString(s3.KmsKeyId)
			out.ResolvedS3URI = aws.ToString(s3.ResolvedOutputS3Uri)
		}
		if c := o.DataCatalogConfig; c != nil {
			out.TableName = aws.ToString(c.TableName)
			out.DatabaseName = aws.ToString(c.Database)
			out.Catalog = aws.ToString(c.Catalog)
		}
		out.Spec.Offline = off
	}
	if t := d.ThroughputConfig; t != nil {
		out.Spec.Throughput = &Throughput{Mode: string(t.ThroughputMode), ReadCapacityUnits: int64(aws.ToInt32(t.ProvisionedReadCapacityUnits)), WriteCapacityUnits: int64(aws.ToInt32(t.ProvisionedWriteCapacityUnits))}
	}
	if s := d.OfflineStoreStatus; s != nil {
		out.OfflineStoreStatus = string(s.Status)
	}
	if s := d.LastUpdateStatus; s != nil {
		out.LastUpdateStatus = string(s.Status)
	}
	return out
}

func fsSortedKeys(m map[string]string) []string {
	// Stable request bodies make retries and logs comparable.
	return slices.Sorted(maps.Keys(m))
}
