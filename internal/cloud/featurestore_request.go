package cloud

import (
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// FeatureGroupConfig is a feature group as CreateFeatureGroup takes it, in
// plain Go: the SDK request structs are built from it here, and nowhere
// else. Numbers were checked to fit the API's 32-bit fields by the caller.
type FeatureGroupConfig struct {
	Name             string
	Description      string
	RecordIdentifier string
	EventTime        string
	RoleARN          string
	Features         []FeatureDefinition
	Online           *OnlineStoreConfig // nil: not sent
	Offline          *OfflineStoreConfig
	Throughput       *ThroughputConfig
	Tags             map[string]string
}

// FeatureDefinition is one feature: name, value type and collection.
type FeatureDefinition struct {
	Name            string
	Type            string // Integral, Fractional or String
	CollectionType  string // "", List, Set or Vector
	VectorDimension int32  // Vector only
}

// OnlineStoreConfig is the online store as sent and described.
type OnlineStoreConfig struct {
	Enabled     bool
	StorageType string // "" as described when AWS does not say
	KMSKeyID    string
	TTL         *TTLDuration
}

// TTLDuration is an online store's time to live.
type TTLDuration struct {
	Unit  string
	Value int32
}

// OfflineStoreConfig is the offline store as sent and described.
type OfflineStoreConfig struct {
	S3URI                    string
	KMSKeyID                 string
	TableFormat              string // "" or "Default" as described when AWS does not say
	DisableGlueTableCreation bool
}

// ThroughputConfig is the throughput mode and, when provisioned, the
// capacity units (0: not sent).
type ThroughputConfig struct {
	Mode               string
	ReadCapacityUnits  int32
	WriteCapacityUnits int32
}

// FeatureGroupInfo is a feature group as DescribeFeatureGroup and ListTags
// give it, in plain Go.
type FeatureGroupInfo struct {
	FeatureGroupConfig // Tags: every tag of the group
	ARN                string
	Status             string
	FailureReason      string
	LastUpdateStatus   string
	OfflineStoreStatus string
	TableName          string
	DatabaseName       string
	Catalog            string
	ResolvedS3URI      string
	CreationTime       time.Time
}

// createFeatureGroupInput builds the CreateFeatureGroup request.
func createFeatureGroupInput(c FeatureGroupConfig) *sagemaker.CreateFeatureGroupInput {
	in := &sagemaker.CreateFeatureGroupInput{
		FeatureGroupName:            aws.String(c.Name),
		RecordIdentifierFeatureName: aws.String(c.RecordIdentifier),
		EventTimeFeatureName:        aws.String(c.EventTime),
		FeatureDefinitions:          sdkFeatureDefinitions(c.Features),
	}
	if c.Description != "" {
		in.Description = aws.String(c.Description)
	}
	if c.RoleARN != "" {
		in.RoleArn = aws.String(c.RoleARN)
	}
	if o := c.Online; o != nil {
		in.OnlineStoreConfig = &types.OnlineStoreConfig{EnableOnlineStore: aws.Bool(o.Enabled)}
		if o.Enabled {
			in.OnlineStoreConfig.StorageType = types.StorageType(o.StorageType)
			if o.KMSKeyID != "" {
				in.OnlineStoreConfig.SecurityConfig = &types.OnlineStoreSecurityConfig{KmsKeyId: aws.String(o.KMSKeyID)}
			}
			in.OnlineStoreConfig.TtlDuration = sdkTTL(o.TTL)
		}
	}
	if o := c.Offline; o != nil {
		in.OfflineStoreConfig = &types.OfflineStoreConfig{
			S3StorageConfig:          &types.S3StorageConfig{S3Uri: aws.String(o.S3URI)},
			DisableGlueTableCreation: aws.Bool(o.DisableGlueTableCreation),
			TableFormat:              types.TableFormat(o.TableFormat),
		}
		if o.KMSKeyID != "" {
			in.OfflineStoreConfig.S3StorageConfig.KmsKeyId = aws.String(o.KMSKeyID)
		}
	}
	if t := c.Throughput; t != nil {
		in.ThroughputConfig = &types.ThroughputConfig{
			ThroughputMode:                types.ThroughputMode(t.Mode),
			ProvisionedReadCapacityUnits:  capacityUnits(t.ReadCapacityUnits),
			ProvisionedWriteCapacityUnits: capacityUnits(t.WriteCapacityUnits),
		}
	}
	for _, k := range sortedTagKeys(c.Tags) {
		in.Tags = append(in.Tags, types.Tag{Key: aws.String(k), Value: aws.String(c.Tags[k])})
	}
	return in
}

func capacityUnits(n int32) *int32 {
	if n == 0 {
		return nil
	}
	return aws.Int32(n)
}

func sdkFeatureDefinitions(fs []FeatureDefinition) []types.FeatureDefinition {
	out := make([]types.FeatureDefinition, 0, len(fs))
	for _, f := range fs {
		d := types.FeatureDefinition{FeatureName: aws.String(f.Name), FeatureType: types.FeatureType(f.Type)}
		if f.CollectionType != "" {
			d.CollectionType = types.CollectionType(f.CollectionType)
		}
		if f.CollectionType == string(types.CollectionTypeVector) {
			d.CollectionConfig = &types.CollectionConfigMemberVectorConfig{Value: types.VectorConfig{Dimension: aws.Int32(f.VectorDimension)}}
		}
		out = append(out, d)
	}
	return out
}

func sdkTTL(t *TTLDuration) *types.TtlDuration {
	if t == nil {
		return nil
	}
	return &types.TtlDuration{Unit: types.TtlDurationUnit(t.Unit), Value: aws.Int32(t.Value)}
}

func sdkThroughputUpdate(t *ThroughputConfig) *types.ThroughputConfigUpdate {
	if t == nil {
		return nil
	}
	return &types.ThroughputConfigUpdate{
		ThroughputMode:                types.ThroughputMode(t.Mode),
		ProvisionedReadCapacityUnits:  capacityUnits(t.ReadCapacityUnits),
		ProvisionedWriteCapacityUnits: capacityUnits(t.WriteCapacityUnits),
	}
}

// Info translates what DescribeFeatureGroup and ListTags said.
func (fg *FeatureGroup) Info() FeatureGroupInfo {
	d := fg.DescribeFeatureGroupOutput
	out := FeatureGroupInfo{
		FeatureGroupConfig: FeatureGroupConfig{
			Name:             aws.ToString(d.FeatureGroupName),
			Description:      aws.ToString(d.Description),
			RecordIdentifier: aws.ToString(d.RecordIdentifierFeatureName),
			EventTime:        aws.ToString(d.EventTimeFeatureName),
			RoleARN:          aws.ToString(d.RoleArn),
			Tags:             maps.Clone(fg.Tags),
		},
		ARN:           aws.ToString(d.FeatureGroupArn),
		Status:        string(d.FeatureGroupStatus),
		FailureReason: aws.ToString(d.FailureReason),
		CreationTime:  aws.ToTime(d.CreationTime),
	}
	for _, fd := range d.FeatureDefinitions {
		f := FeatureDefinition{Name: aws.ToString(fd.FeatureName), Type: string(fd.FeatureType), CollectionType: string(fd.CollectionType)}
		if vc, ok := fd.CollectionConfig.(*types.CollectionConfigMemberVectorConfig); ok {
			f.VectorDimension = aws.ToInt32(vc.Value.Dimension)
		}
		out.Features = append(out.Features, f)
	}
	if o := d.OnlineStoreConfig; o != nil {
		on := &OnlineStoreConfig{Enabled: aws.ToBool(o.EnableOnlineStore), StorageType: string(o.StorageType)}
		if o.SecurityConfig != nil {
			on.KMSKeyID = aws.ToString(o.SecurityConfig.KmsKeyId)
		}
		if t := o.TtlDuration; t != nil {
			on.TTL = &TTLDuration{Unit: string(t.Unit), Value: aws.ToInt32(t.Value)}
		}
		out.Online = on
	}
	if o := d.OfflineStoreConfig; o != nil {
		off := &OfflineStoreConfig{DisableGlueTableCreation: aws.ToBool(o.DisableGlueTableCreation), TableFormat: string(o.TableFormat)}
		if s3 := o.S3StorageConfig; s3 != nil {
			off.S3URI = aws.ToString(s3.S3Uri)
			off.KMSKeyID = aws.ToString(s3.KmsKeyId)
			out.ResolvedS3URI = aws.ToString(s3.ResolvedOutputS3Uri)
		}
		if c := o.DataCatalogConfig; c != nil {
			out.TableName = aws.ToString(c.TableName)
			out.DatabaseName = aws.ToString(c.Database)
			out.Catalog = aws.ToString(c.Catalog)
		}
		out.Offline = off
	}
	if t := d.ThroughputConfig; t != nil {
		out.Throughput = &ThroughputConfig{Mode: string(t.ThroughputMode), ReadCapacityUnits: aws.ToInt32(t.ProvisionedReadCapacityUnits), WriteCapacityUnits: aws.ToInt32(t.ProvisionedWriteCapacityUnits)}
	}
	if s := d.OfflineStoreStatus; s != nil {
		out.OfflineStoreStatus = string(s.Status)
	}
	if s := d.LastUpdateStatus; s != nil {
		out.LastUpdateStatus = string(s.Status)
	}
	return out
}
