package cloud

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// LocatorS3API is the S3 subset the Locator calls.
type LocatorS3API interface {
	GetBucketLocation(ctx context.Context, in *s3.GetBucketLocationInput, opts ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error)
	GetBucketReplication(ctx context.Context, in *s3.GetBucketReplicationInput, opts ...func(*s3.Options)) (*s3.GetBucketReplicationOutput, error)
}

// LocatorKMSAPI is the KMS subset the Locator calls.
type LocatorKMSAPI interface {
	DescribeKey(ctx context.Context, in *kms.DescribeKeyInput, opts ...func(*kms.Options)) (*kms.DescribeKeyOutput, error)
}

// LocatorEC2API is the EC2 subset the Locator calls.
type LocatorEC2API interface {
	DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, opts ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
}

// Locator implements residency.Locator with aws-sdk-go-v2. Each question is
// asked in the region where the thing lives. It caches regional clients only,
// never answers, and is safe for concurrent use.
type Locator struct {
	region string // the provider's region: bare KMS key ids resolve here
	s3     func(region string) LocatorS3API
	kms    func(region string) LocatorKMSAPI
	ec2    func(region string) LocatorEC2API
	// secrets asks Secrets Manager in a region (the Slurm munge key).
	secrets func(region string) LocatorSecretsAPI

	// bucketRegions remembers where buckets live: a bucket never moves, so
	// every check of one Locator (one provider process) asks S3 once.
	mu            sync.Mutex
	bucketRegions map[string]string
}

var _ residency.Locator = (*Locator)(nil)

// NewLocator returns a Locator over c, making regional clients with
// c.ForRegion as needed.
func NewLocator(c *Clients) *Locator {
	var mu sync.Mutex
	regional := map[string]*Clients{}
	forRegion := func(region string) *Clients {
		mu.Lock()
		defer mu.Unlock()
		if r, ok := regional[region]; ok {
			return r
		}
		r := c.ForRegion(region)
		regional[region] = r
		return r
	}
	return &Locator{
		region:  c.Region,
		s3:      func(region string) LocatorS3API { return forRegion(region).S3 },
		kms:     func(region string) LocatorKMSAPI { return forRegion(region).KMS },
		ec2:     func(region string) LocatorEC2API { return forRegion(region).EC2 },
		secrets: func(region string) LocatorSecretsAPI { return forRegion(region).SecretsManager() },
	}
}

// BucketRegion asks S3 where a bucket lives. An empty LocationConstraint
// means us-east-1 and "EU" means eu-west-1. When S3 refuses because the
// bucket is elsewhere, the region it names in x-amz-bucket-region is used.
func (l *Locator) BucketRegion(ctx context.Context, bucket string) (string, error) {
	l.mu.Lock()
	r, ok := l.bucketRegions[bucket]
	l.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := l.bucketRegion(ctx, bucket)
	if err == nil {
		l.mu.Lock()
		if l.bucketRegions == nil {
			l.bucketRegions = map[string]string{}
		}
		l.bucketRegions[bucket] = r
		l.mu.Unlock()
	}
	return r, err
}

func (l *Locator) bucketRegion(ctx context.Context, bucket string) (string, error) {
	out, err := l.s3(l.region).GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(bucket)})
	if err != nil {
		if r := bucketRegionHeader(err); r != "" {
			return r, nil
		}
		return "", fmt.Errorf("locating bucket %q: %w", bucket, classify(err))
	}
	return residency.BucketLocationRegion(string(out.LocationConstraint)), nil
}

// bucketRegionHeader returns the region S3 names in the x-amz-bucket-region
// header of an error response (a redirect, or a refusal to a caller without
// s3:GetBucketLocation), or "".
func bucketRegionHeader(err error) string {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		if r := re.Response.Header.Get("X-Amz-Bucket-Region"); residency.ValidRegion(r) {
			return r
		}
	}
	return ""
}

// BucketReplicationRegions returns the region of every replication rule's
// destination bucket, whatever the rule's status (a disabled rule is one
// switch away from copying data). Destination ARNs carry no region, so each
// destination bucket is located in turn.
func (l *Locator) BucketReplicationRegions(ctx context.Context, bucket string) ([]string, error) {
	region, err := l.BucketRegion(ctx, bucket)
	if err != nil {
		return nil, err
	}
	out, err := l.s3(region).GetBucketReplication(ctx, &s3.GetBucketReplicationInput{Bucket: aws.String(bucket)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ReplicationConfigurationNotFoundError" {
			return nil, nil
		}
		return nil, fmt.Errorf("reading replication of bucket %q: %w", bucket, classify(err))
	}
	if out.ReplicationConfiguration == nil {
		return nil, nil
	}
	var regions []string
	for _, rule := range out.ReplicationConfiguration.Rules {
		if rule.Destination == nil {
			continue
		}
		dest := aws.ToString(rule.Destination.Bucket)
		name := dest
		if a, err := residency.ParseARN(dest); err == nil {
			name, _, _ = strings.Cut(a.Resource, "/")
		}
		r, err := l.BucketRegion(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("bucket %q replicates to %q: %w", bucket, dest, err)
		}
		if !slices.Contains(regions, r) {
			regions = append(regions, r)
		}
	}
	return regions, nil
}

// ZoneID resolves a zone name in region to its zone id.
func (l *Locator) ZoneID(ctx context.Context, region, zoneName string) (string, error) {
	out, err := l.ec2(region).DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{
		AllAvailabilityZones: aws.Bool(true),
		Filters:              []ec2types.Filter{{Name: aws.String("zone-name"), Values: []string{zoneName}}},
	})
	if err != nil {
		return "", fmt.Errorf("describing zone %q in %s: %w", zoneName, region, classify(err))
	}
	for _, z := range out.AvailabilityZones {
		if aws.ToString(z.ZoneName) == zoneName && aws.ToString(z.ZoneId) != "" {
			return aws.ToString(z.ZoneId), nil
		}
	}
	return "", fmt.Errorf("zone %q in %s: %w", zoneName, region, residency.ErrNotFound)
}

// errMultiRegionUnknown is a multi-region key described without its
// multi-region configuration: its replicas are unknown.
var errMultiRegionUnknown = errors.New("a multi-region key without its multi-region configuration in the answer")

// DescribeKey describes a KMS key or alias (ARN, or a bare id or alias name
// in the provider's region) in the region it lives in.
func (l *Locator) DescribeKey(ctx context.Context, key string) (residency.KeyInfo, error) {
	region := l.region
	if a, err := residency.ParseARN(key); err == nil && a.Region != "" {
		region = a.Region
	}
	out, err := l.kms(region).DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(key)})
	if err != nil {
		return residency.KeyInfo{}, fmt.Errorf("describing KMS key %q: %w", key, classify(err))
	}
	md := out.KeyMetadata
	if md == nil {
		return residency.KeyInfo{}, fmt.Errorf("describing KMS key %q: no key metadata in the answer", key)
	}
	info := residency.KeyInfo{ARN: aws.ToString(md.Arn), Region: region, CustomerManaged: md.KeyManager == kmstypes.KeyManagerTypeCustomer, MultiRegion: aws.ToBool(md.MultiRegion)}
	if a, err := residency.ParseARN(info.ARN); err == nil && a.Region != "" {
		info.Region = a.Region
	}
	if info.MultiRegion && md.MultiRegionConfiguration == nil {
		// Its replicas are unknown: the engine must not assume there are none.
		return residency.KeyInfo{}, fmt.Errorf("describing KMS key %q: %w", key, errMultiRegionUnknown)
	}
	if mr := md.MultiRegionConfiguration; mr != nil {
		var others []string
		if mr.PrimaryKey != nil {
			others = append(others, aws.ToString(mr.PrimaryKey.Region))
		}
		for _, k := range mr.ReplicaKeys {
			others = append(others, aws.ToString(k.Region))
		}
		for _, r := range others {
			if r != "" && r != info.Region && !slices.Contains(info.ReplicaRegions, r) {
				info.ReplicaRegions = append(info.ReplicaRegions, r)
			}
		}
	}
	return info, nil
}

// classify wraps err with residency.ErrNotFound or residency.ErrAccessDenied
// when the AWS error code says so, so the engine can name the fix.
func classify(err error) error {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.ErrorCode() {
	case "NoSuchBucket", "NotFoundException", "NotFound":
		return fmt.Errorf("%w: %w", residency.ErrNotFound, err)
	case "AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AllAccessDisabled", "AuthorizationError":
		return fmt.Errorf("%w: %w", residency.ErrAccessDenied, err)
	}
	return err
}
