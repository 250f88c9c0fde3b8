package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// S3 is the part of the S3 client Publish uses.
type S3 interface {
	GetBucketLocation(ctx context.Context, in *s3.GetBucketLocationInput, optFns ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Target is where a report goes.
type Target struct {
	URI      string // s3://bucket/prefix/ (a key ending in .json is used as is)
	Region   string // the profile's region: bucket and key must be in it
	KMSKeyID string // key id, alias or ARN; "" uses the bucket's AWS-managed aws/s3 key
	// BucketOwner is the AWS account that must own the bucket (S3's
	// ExpectedBucketOwner): the account of the node's instance identity
	// document. S3 refuses the write (403) when another account owns the
	// bucket. "" when the account is not known: not checked.
	BucketOwner string
}

// ErrWrongRegion means the bucket or key is outside the profile's region.
var ErrWrongRegion = errors.New("outside the profile's region")

// ErrReportExists means an object already has the report's key. A report
// is written once and never overwritten, so Publish does not retry.
var ErrReportExists = errors.New("a report already exists at this key, and reports are never overwritten")

// Publish writes r as JSON (Encode) to t, encrypted with SSE-KMS, after
// checking that the bucket and the KMS key are in t.Region. The write is
// conditional (If-None-Match: *): when the key exists, nothing is written
// and the error is ErrReportExists. When t.BucketOwner is set, the bucket
// must belong to that account. It returns the object URI written.
func Publish(ctx context.Context, api S3, t Target, r Report) (string, error) {
	body, err := Encode(r)
	if err != nil {
		return "", fmt.Errorf("publish: %w", err)
	}
	return PublishBody(ctx, api, t, r, body, nil)
}

// Encode is the report as Publish writes it: indented JSON. A reader that
// checks an attestation hashes these bytes exactly as stored.
func Encode(r Report) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return b, nil
}

// AttestationSuffix ends the key of the attestation document that vouches
// for a report: <report key>.nitrotpm.
const AttestationSuffix = ".nitrotpm"

// PublishBody writes body, the encoded report r (Encode), as Publish does,
// to the key r gives. When attestation is not nil, it is written first,
// under the same rules (SSE-KMS, written once, the bucket owner), to the
// report's key plus AttestationSuffix with content type application/cose,
// so a report never stands without the document that vouches for it; the
// report is then written only when the document was. It returns the
// report's object URI.
func PublishBody(ctx context.Context, api S3, t Target, r Report, body, attestation []byte) (string, error) {
	bucket, key, owner, err := locate(ctx, api, t)
	if err != nil {
		return "", err
	}
	key = objectKey(key, r)
	if attestation != nil {
		if err := put(ctx, api, t, bucket, key+AttestationSuffix, owner, "application/cose", attestation); err != nil {
			return "", err
		}
	}
	if err := put(ctx, api, t, bucket, key, owner, "application/json", body); err != nil {
		return "", err
	}
	return "s3://" + bucket + "/" + key, nil
}

// PublishObject writes body under t's prefix at rel (t.URI must name a
// prefix), under Publish's rules: the bucket and the KMS key in t.Region,
// SSE-KMS, written once (ErrReportExists when the key exists), the bucket
// owner when set. It returns the object URI.
func PublishObject(ctx context.Context, api S3, t Target, rel, contentType string, body []byte) (string, error) {
	bucket, prefix, owner, err := locate(ctx, api, t)
	if err != nil {
		return "", err
	}
	if strings.HasSuffix(prefix, ".json") {
		return "", fmt.Errorf("publish: %s names an object, not a prefix", t.URI)
	}
	key := rel
	if prefix != "" {
		key = strings.TrimSuffix(prefix, "/") + "/" + rel
	}
	if err := put(ctx, api, t, bucket, key, owner, contentType, body); err != nil {
		return "", err
	}
	return "s3://" + bucket + "/" + key, nil
}

// locate checks t: its URI, its KMS key's region and its bucket's region.
// It returns the bucket, the key or prefix, and the expected bucket owner.
func locate(ctx context.Context, api S3, t Target) (bucket, key string, owner *string, err error) {
	if t.Region == "" {
		return "", "", nil, errors.New("publish: no region: the profile must declare host.region")
	}
	bucket, key, err = profile.SplitS3URI(t.URI)
	if err != nil {
		return "", "", nil, fmt.Errorf("publish: %w", err)
	}
	if strings.HasPrefix(t.KMSKeyID, "arn:") {
		a, err := residency.ParseKMSKeyARN(t.KMSKeyID)
		if err != nil || a.Region == "" {
			return "", "", nil, fmt.Errorf("publish: %q is not a KMS key ARN with a region", t.KMSKeyID)
		}
		if a.Region != t.Region {
			return "", "", nil, fmt.Errorf("publish: KMS key region %s is %w %s", a.Region, ErrWrongRegion, t.Region)
		}
	}
	if t.BucketOwner != "" {
		owner = aws.String(t.BucketOwner)
	}
	loc, err := api.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(bucket), ExpectedBucketOwner: owner})
	if err != nil {
		return "", "", nil, fmt.Errorf("publish: locate bucket %s: %w", bucket, err)
	}
	if got := residency.BucketLocationRegion(string(loc.LocationConstraint)); got != t.Region {
		return "", "", nil, fmt.Errorf("publish: bucket %s is in %s, %w %s", bucket, got, ErrWrongRegion, t.Region)
	}
	return bucket, key, owner, nil
}

// put writes one object once, SSE-KMS encrypted.
func put(ctx context.Context, api S3, t Target, bucket, key string, owner *string, contentType string, body []byte) error {
	in := &s3.PutObjectInput{
		Bucket:               aws.String(bucket),
		Key:                  aws.String(key),
		Body:                 bytes.NewReader(body),
		ContentType:          aws.String(contentType),
		ServerSideEncryption: types.ServerSideEncryptionAwsKms,
		IfNoneMatch:          aws.String("*"), // written once: never replace an object
		ExpectedBucketOwner:  owner,
	}
	if t.KMSKeyID != "" {
		in.SSEKMSKeyId = aws.String(t.KMSKeyID)
	}
	if _, err := api.PutObject(ctx, in); err != nil {
		if keyExists(err) {
			return fmt.Errorf("publish: s3://%s/%s: %w (%w)", bucket, key, ErrReportExists, err)
		}
		return fmt.Errorf("publish: put s3://%s/%s: %w", bucket, key, err)
	}
	return nil
}

// keyExists reports whether err is S3's answer to a conditional write whose
// key exists: 412 PreconditionFailed, or 409 ConditionalRequestConflict
// when another write to the key is in flight.
func keyExists(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "PreconditionFailed", "ConditionalRequestConflict":
			return true
		}
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == 412
}

// objectKey is prefix/<instance or host>/<time>.json, or the key itself
// when it already names a .json object.
func objectKey(prefix string, r Report) string {
	if strings.HasSuffix(prefix, ".json") {
		return prefix
	}
	node := "unknown-node"
	if r.Inventory != nil {
		switch {
		case r.Inventory.Host.InstanceID != "":
			node = r.Inventory.Host.InstanceID
		case r.Inventory.Hostname != "":
			node = r.Inventory.Hostname
		}
	}
	name := node + "/" + r.GeneratedAt.UTC().Format("20060102T150405Z") + ".json"
	if prefix == "" {
		return name
	}
	return strings.TrimSuffix(prefix, "/") + "/" + name
}

// NewS3Client returns an S3 client for region from the standard AWS
// configuration. AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL override the
// endpoint (pathStyle should then be true, as emulators expect).
func NewS3Client(ctx context.Context, region string, pathStyle bool) (*s3.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle }), nil
}
