package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// pagedS3 makes every listing page hold at most two keys, so that a
// listing of five reports takes three pages.
type pagedS3 struct {
	cloud.ReportsAPI
	pages int
}

func (p *pagedS3) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	in.MaxKeys = aws.Int32(2)
	p.pages++
	return p.ReportsAPI.ListObjectsV2(ctx, in, optFns...)
}

// TestValidationReportsMoto lists and reads reports under a prefix of
// moto's S3 (every page), reads an instance's console output from moto's
// EC2 and the caller's account from moto's STS.
func TestValidationReportsMoto(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := acctest.StartMoto(ctx, acctest.MotoOptions{})
	if errors.Is(err, acctest.ErrMotoNotFound) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	const region = "me-central-1"
	creds := credentials.NewStaticCredentialsProvider("testing", "testing", "")
	s3c := s3.New(s3.Options{Region: region, BaseEndpoint: aws.String(m.URL), Credentials: creds, UsePathStyle: true})
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("reports"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}}); err != nil {
		t.Fatal(err)
	}
	put := func(key, body string) {
		t.Helper()
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("reports"), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		put(fmt.Sprintf("gate/train-a/i-%d/20261123T06000%dZ.json", i, i), fmt.Sprintf(`{"n":%d}`, i))
	}
	put("gate/train-a/i-0/notes.txt", "not a report")
	put("gate/train-b/i-9/20261123T060000Z.json", "{}") // another cluster's

	api := &pagedS3{ReportsAPI: s3c}
	keys, err := cloud.ListReports(ctx, api, "s3://reports/gate/train-a", cloud.ReportListing{})
	if err != nil {
		t.Fatal(err)
	}
	var rels []string
	for _, k := range keys {
		rels = append(rels, k.Rel)
	}
	want := []string{"i-0/20261123T060000Z.json", "i-1/20261123T060001Z.json", "i-2/20261123T060002Z.json", "i-3/20261123T060003Z.json", "i-4/20261123T060004Z.json"}
	if !slices.Equal(rels, want) {
		t.Errorf("keys = %v, want %v", rels, want)
	}
	if api.pages != 3 {
		t.Errorf("%d pages, want 3 (two keys a page)", api.pages)
	}
	body, err := cloud.GetReport(ctx, s3c, "s3://reports/gate/train-a/", keys[3].Key, "")
	if err != nil || string(body) != `{"n":3}` {
		t.Errorf("GetReport = %q, %v", body, err)
	}
	// A large body is read whole after the call returned, through the
	// clients' per-call deadline.
	big := strings.Repeat("x", cloud.MaxReportBytes)
	put("gate/train-a/i-big/20261123T060000Z.json", big)
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	clients, err := cloud.New(ctx, cloud.Config{Region: region, Endpoints: map[string]string{"s3": m.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if body, err := cloud.GetReport(ctx, clients.S3, "s3://reports/gate/train-a/", "gate/train-a/i-big/20261123T060000Z.json", ""); err != nil || len(body) != len(big) {
		t.Errorf("GetReport of 1 MiB through the bounded client = %d bytes, %v", len(body), err)
	}
	if _, err := cloud.GetReport(ctx, s3c, "s3://reports/gate/", "gate/none.json", ""); err == nil {
		t.Error("GetReport of a missing key succeeded")
	}
	if _, err := cloud.ListReports(ctx, s3c, "s3://no-such-bucket/x/", cloud.ReportListing{}); err == nil {
		t.Error("ListReports of a missing bucket succeeded")
	}

	// The bounds: keys up to StartAfter are not listed, more than Max keys
	// (a flood) is a TooManyReportsError found without listing them all,
	// the node prefixes are listed without the objects, and a bucket of
	// another account is refused (ExpectedBucketOwner).
	for i := range 3 {
		put(fmt.Sprintf("gate/train-c/i-1/20261123T07000%dZ.json", i), "{}")
	}
	keys, err = cloud.ListReports(ctx, s3c, "s3://reports/gate/train-c/i-1/", cloud.ReportListing{StartAfter: "20261123T070000Z.json", Max: 3})
	if err != nil || len(keys) != 2 || keys[0].Rel != "20261123T070001Z.json" {
		t.Errorf("ListReports after a key = %+v, %v", keys, err)
	}
	for i := range 30 {
		put(fmt.Sprintf("gate/flood/i-1/%04d.json", i), "{}")
	}
	fl := &pagedS3{ReportsAPI: s3c}
	var tm *cloud.TooManyReportsError
	if _, err := cloud.ListReports(ctx, fl, "s3://reports/gate/flood/i-1/", cloud.ReportListing{Max: 8}); !errors.As(err, &tm) || !strings.Contains(err.Error(), "more than 8 objects under s3://reports/gate/flood/i-1/") {
		t.Errorf("a flood: %v", err)
	}
	if fl.pages > 5 {
		t.Errorf("a flood listed %d pages of 2 keys: the bound of 8 should stop it after 5", fl.pages)
	}
	nodes, err := cloud.ListReportNodes(ctx, s3c, "s3://reports/gate/train-a/", 10, "")
	if want := []string{"i-0", "i-1", "i-2", "i-3", "i-4", "i-big"}; err != nil || !slices.Equal(nodes, want) {
		t.Errorf("ListReportNodes = %v, %v; want %v", nodes, err, want)
	}
	if _, err := cloud.ListReportNodes(ctx, s3c, "s3://reports/gate/train-a/", 3, ""); !errors.As(err, &tm) {
		t.Errorf("ListReportNodes past its bound: %v", err)
	}
	if _, err := cloud.ListReports(ctx, s3c, "s3://reports/gate/train-a/", cloud.ReportListing{Owner: "123456789012"}); err != nil {
		t.Errorf("ListReports, the bucket's own account: %v", err)
	}
	if _, err := cloud.GetReport(ctx, s3c, "s3://reports/gate/train-a/", keys[0].Key, "999999999999"); err == nil {
		t.Logf("moto does not check ExpectedBucketOwner on GetObject: not run here")
	}

	ec := ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(m.URL), Credentials: creds})
	imgs, err := ec.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("images: %v", err)
	}
	run, err := ec.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: imgs.Images[0].ImageId, InstanceType: ec2types.InstanceTypeC7iLarge, MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(run.Instances[0].InstanceId)
	out, err := cloud.ConsoleTail(ctx, ec, id, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(out, "\n")); out == "" || n > 3 {
		t.Errorf("console tail has %d lines: %q", n, out)
	}
	if _, err := cloud.ConsoleTail(ctx, ec, "i-00000000000000000", 3); err == nil {
		t.Error("console output of a missing instance succeeded")
	}

	st := sts.New(sts.Options{Region: region, BaseEndpoint: aws.String(m.URL), Credentials: creds})
	acct, err := cloud.CallerAccount(ctx, st)
	if err != nil || len(acct) != 12 {
		t.Errorf("CallerAccount = %q, %v", acct, err)
	}
}
