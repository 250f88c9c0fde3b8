package acctest

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/report"
)

// TestS3ConditionalWrite_reportWrittenOnce: moto itself honours
// If-None-Match: * on PutObject (412 PreconditionFailed when the key
// exists), so the shim needs no double for conditional writes. hwprobe's
// Publish, through the shim as the node player reaches it, writes a report
// once; a second report with the same key is refused with
// report.ErrReportExists naming the key, and the first stays as written.
//
// moto does not check x-amz-expected-bucket-owner (AWS answers 403
// AccessDenied when another account owns the bucket): the header itself is
// checked by hwprobe/report's unit tests.
func TestS3ConditionalWrite_reportWrittenOnce(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	c := s3Client(h, Region)
	bucket := "hwprobe-reports"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{
		Bucket:                    aws.String(bucket),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(Region)},
	}); err != nil {
		t.Fatal(err)
	}

	// moto alone: if it ever stops refusing, the shim needs a double
	// (shim_s3_conditional.go) for the tests to mean anything.
	moto := s3.NewFromConfig(sdkConfig(Region), func(o *s3.Options) { o.BaseEndpoint = aws.String(h.Moto.URL); o.UsePathStyle = true })
	for i := range 2 {
		_, err := moto.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("probe.json"), Body: strings.NewReader("{}"), IfNoneMatch: aws.String("*")})
		if i == 0 && err != nil {
			t.Fatalf("first conditional PutObject: %v", err)
		}
		if i == 1 && apiCode(err) != "PreconditionFailed" {
			t.Fatalf("moto alone answers a conditional PutObject on an existing key with %v, not 412 PreconditionFailed: add a double to the shim", err)
		}
	}

	host := probe.Host{OnEC2: true, InstanceID: "i-0123456789abcdef0", Region: Region, AccountID: ShimAccountID}
	first := report.Report{Schema: report.SchemaVersion, GeneratedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Version: "first",
		Inventory: &probe.Inventory{Schema: probe.SchemaVersion, Host: host}}
	target := report.Target{URI: "s3://" + bucket + "/train-a/", Region: Region, BucketOwner: ShimAccountID}
	uri, err := report.Publish(ctx, c, target, first)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimPrefix(uri, "s3://"+bucket+"/")
	if key != "train-a/i-0123456789abcdef0/20260301T100000Z.json" {
		t.Fatalf("published %s", uri)
	}
	read := func() string {
		t.Helper()
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	written := read()

	second := first
	second.Version = "second"
	_, err = report.Publish(ctx, c, target, second)
	if !errors.Is(err, report.ErrReportExists) || !strings.Contains(err.Error(), uri) {
		t.Fatalf("second Publish to %s: %v, want report.ErrReportExists naming the key", uri, err)
	}
	if got := read(); got != written || !strings.Contains(got, `"hwprobe_version": "first"`) {
		t.Errorf("the first report changed:\n%s\nwant\n%s", got, written)
	}
}
