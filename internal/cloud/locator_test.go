package cloud

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// fakeS3 answers GetBucketLocation and GetBucketReplication from maps and
// records which region was asked.
type fakeS3 struct {
	region      string
	locations   map[string]string // bucket -> LocationConstraint ("" = us-east-1)
	locErr      map[string]error
	replication map[string]*s3types.ReplicationConfiguration
	replErr     map[string]error
	asked       *[]string
}

func (f fakeS3) GetBucketLocation(_ context.Context, in *s3.GetBucketLocationInput, _ ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error) {
	b := aws.ToString(in.Bucket)
	*f.asked = append(*f.asked, "location:"+b+"@"+f.region)
	if err := f.locErr[b]; err != nil {
		return nil, err
	}
	c, ok := f.locations[b]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NoSuchBucket", Message: "The specified bucket does not exist"}
	}
	return &s3.GetBucketLocationOutput{LocationConstraint: s3types.BucketLocationConstraint(c)}, nil
}

func (f fakeS3) GetBucketReplication(_ context.Context, in *s3.GetBucketReplicationInput, _ ...func(*s3.Options)) (*s3.GetBucketReplicationOutput, error) {
	b := aws.ToString(in.Bucket)
	*f.asked = append(*f.asked, "replication:"+b+"@"+f.region)
	if err := f.replErr[b]; err != nil {
		return nil, err
	}
	rc, ok := f.replication[b]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "ReplicationConfigurationNotFoundError", Message: "The replication configuration was not found"}
	}
	return &s3.GetBucketReplicationOutput{ReplicationConfiguration: rc}, nil
}

type fakeKMS struct {
	region string
	keys   map[string]*kmstypes.KeyMetadata
	asked  *[]string
}

func (f fakeKMS) DescribeKey(_ context.Context, in *kms.DescribeKeyInput, _ ...func(*kms.Options)) (*kms.DescribeKeyOutput, error) {
	k := aws.ToString(in.KeyId)
	*f.asked = append(*f.asked, "key:"+k+"@"+f.region)
	if k == "denied" {
		return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized"}
	}
	md, ok := f.keys[k]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NotFoundException", Message: "key not found"}
	}
	return &kms.DescribeKeyOutput{KeyMetadata: md}, nil
}

type fakeEC2 struct {
	region string
	zones  map[string]string // name -> id
}

func (f fakeEC2) DescribeAvailabilityZones(_ context.Context, in *ec2.DescribeAvailabilityZonesInput, _ ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error) {
	if f.region == "denied-1" {
		return nil, &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "no"}
	}
	out := &ec2.DescribeAvailabilityZonesOutput{}
	for name, id := range f.zones {
		if !strings.HasPrefix(name, f.region) {
			continue
		}
		match := true
		for _, flt := range in.Filters {
			if aws.ToString(flt.Name) == "zone-name" && !slices.Contains(flt.Values, name) {
				match = false
			}
		}
		if match {
			out.AvailabilityZones = append(out.AvailabilityZones, ec2types.AvailabilityZone{ZoneName: aws.String(name), ZoneId: aws.String(id)})
		}
	}
	return out, nil
}

func redirectError(region string) error {
	h := http.Header{}
	h.Set("X-Amz-Bucket-Region", region)
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusMovedPermanently, Header: h}},
		Err:      &smithy.GenericAPIError{Code: "PermanentRedirect", Message: "use the right endpoint"},
	}}
}

func newTestLocator(asked *[]string) *Locator {
	locations := map[string]string{
		"uae-data": "me-central-1", "uae-dr": "me-central-1", "eu-dr": "eu-central-1",
		"virginia": "", "ireland": "EU", "uae-repl": "me-central-1", "uae-dangling": "me-central-1",
		"uae-denied-repl": "me-central-1",
	}
	replication := map[string]*s3types.ReplicationConfiguration{
		"uae-repl": {Rules: []s3types.ReplicationRule{
			{Status: s3types.ReplicationRuleStatusEnabled, Destination: &s3types.Destination{Bucket: aws.String("arn:aws:s3:::uae-dr")}},
			{Status: s3types.ReplicationRuleStatusDisabled, Destination: &s3types.Destination{Bucket: aws.String("arn:aws:s3:::eu-dr")}},
			{Status: s3types.ReplicationRuleStatusEnabled, Destination: &s3types.Destination{Bucket: aws.String("arn:aws:s3:::uae-dr")}},
		}},
		"uae-dangling": {Rules: []s3types.ReplicationRule{
			{Destination: &s3types.Destination{Bucket: aws.String("arn:aws:s3:::gone")}},
		}},
	}
	keys := map[string]*kmstypes.KeyMetadata{
		"arn:aws:kms:me-central-1:111122223333:key/cmk": {Arn: aws.String("arn:aws:kms:me-central-1:111122223333:key/cmk"), KeyManager: kmstypes.KeyManagerTypeCustomer},
		"arn:aws:kms:eu-west-1:111122223333:key/eu":     {Arn: aws.String("arn:aws:kms:eu-west-1:111122223333:key/eu"), KeyManager: kmstypes.KeyManagerTypeCustomer},
		"alias/aws/s3": {Arn: aws.String("arn:aws:kms:me-central-1:111122223333:key/awsmanaged"), KeyManager: kmstypes.KeyManagerTypeAws},
		"arn:aws:kms:me-central-1:111122223333:alias/training": {
			Arn: aws.String("arn:aws:kms:me-central-1:111122223333:key/mrk-1"), KeyManager: kmstypes.KeyManagerTypeCustomer, MultiRegion: aws.Bool(true),
			MultiRegionConfiguration: &kmstypes.MultiRegionConfiguration{
				PrimaryKey:  &kmstypes.MultiRegionKey{Region: aws.String("me-central-1")},
				ReplicaKeys: []kmstypes.MultiRegionKey{{Region: aws.String("eu-west-1")}},
			},
		},
		"mrk-noconfig": {Arn: aws.String("arn:aws:kms:me-central-1:111122223333:key/mrk-noconfig"), KeyManager: kmstypes.KeyManagerTypeCustomer, MultiRegion: aws.Bool(true)},
		"arn:aws:kms:me-central-1:111122223333:key/mrk-1": {
			Arn: aws.String("arn:aws:kms:me-central-1:111122223333:key/mrk-1"), KeyManager: kmstypes.KeyManagerTypeCustomer,
			MultiRegionConfiguration: &kmstypes.MultiRegionConfiguration{
				PrimaryKey:  &kmstypes.MultiRegionKey{Region: aws.String("me-central-1")},
				ReplicaKeys: []kmstypes.MultiRegionKey{{Region: aws.String("eu-west-1")}, {Region: aws.String("me-central-1")}},
			},
		},
	}
	zones := map[string]string{"me-central-1a": "mec1-az1", "me-central-1b": "mec1-az2", "eu-west-1a": "euw1-az3"}
	return &Locator{
		region: "me-central-1",
		s3: func(region string) LocatorS3API {
			return fakeS3{region: region, locations: locations, replication: replication, asked: asked,
				locErr: map[string]error{
					"elsewhere": redirectError("eu-west-2"),
					"locked":    &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"},
				},
				replErr: map[string]error{"uae-denied-repl": &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}},
			}
		},
		kms: func(region string) LocatorKMSAPI { return fakeKMS{region: region, keys: keys, asked: asked} },
		ec2: func(region string) LocatorEC2API { return fakeEC2{region: region, zones: zones} },
	}
}

func TestLocatorBucketRegion(t *testing.T) {
	tests := []struct {
		bucket, want string
		wantErr      error
	}{
		{bucket: "uae-data", want: "me-central-1"},
		{bucket: "virginia", want: "us-east-1"},
		{bucket: "ireland", want: "eu-west-1"},
		{bucket: "elsewhere", want: "eu-west-2"},
		{bucket: "missing", wantErr: residency.ErrNotFound},
		{bucket: "locked", wantErr: residency.ErrAccessDenied},
	}
	for _, tt := range tests {
		t.Run(tt.bucket, func(t *testing.T) {
			var asked []string
			got, err := newTestLocator(&asked).BucketRegion(context.Background(), tt.bucket)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("BucketRegion(%q) error = %v, want %v", tt.bucket, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("BucketRegion(%q) = %q, %v; want %q", tt.bucket, got, err, tt.want)
			}
		})
	}
}

func TestLocatorBucketReplicationRegions(t *testing.T) {
	tests := []struct {
		bucket  string
		want    []string
		wantErr error
	}{
		{bucket: "uae-data"}, // no configuration
		{bucket: "uae-repl", want: []string{"me-central-1", "eu-central-1"}},
		{bucket: "uae-dangling", wantErr: residency.ErrNotFound},
		{bucket: "uae-denied-repl", wantErr: residency.ErrAccessDenied},
		{bucket: "missing", wantErr: residency.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.bucket, func(t *testing.T) {
			var asked []string
			got, err := newTestLocator(&asked).BucketReplicationRegions(context.Background(), tt.bucket)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("= %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	// Replication is read in the bucket's own region.
	var asked []string
	if _, err := newTestLocator(&asked).BucketReplicationRegions(context.Background(), "uae-repl"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(asked, "replication:uae-repl@me-central-1") {
		t.Errorf("calls = %v, want replication asked in me-central-1", asked)
	}
}

func TestLocatorZoneID(t *testing.T) {
	tests := []struct {
		region, zone, want string
		wantErr            error
	}{
		{region: "me-central-1", zone: "me-central-1a", want: "mec1-az1"},
		{region: "me-central-1", zone: "me-central-1b", want: "mec1-az2"},
		{region: "eu-west-1", zone: "eu-west-1a", want: "euw1-az3"},
		{region: "me-central-1", zone: "me-central-1z", wantErr: residency.ErrNotFound},
		{region: "denied-1", zone: "denied-1a", wantErr: residency.ErrAccessDenied},
	}
	for _, tt := range tests {
		t.Run(tt.zone, func(t *testing.T) {
			got, err := newTestLocator(new([]string)).ZoneID(context.Background(), tt.region, tt.zone)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ZoneID = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestLocatorDescribeKey(t *testing.T) {
	tests := []struct {
		key       string
		want      residency.KeyInfo
		wantAsked string
		wantErr   error
	}{
		{key: "arn:aws:kms:me-central-1:111122223333:key/cmk", want: residency.KeyInfo{Region: "me-central-1", CustomerManaged: true}, wantAsked: "@me-central-1"},
		{key: "arn:aws:kms:eu-west-1:111122223333:key/eu", want: residency.KeyInfo{Region: "eu-west-1", CustomerManaged: true}, wantAsked: "@eu-west-1"},
		{key: "alias/aws/s3", want: residency.KeyInfo{Region: "me-central-1"}, wantAsked: "@me-central-1"},
		{key: "arn:aws:kms:me-central-1:111122223333:key/mrk-1", want: residency.KeyInfo{Region: "me-central-1", CustomerManaged: true, ReplicaRegions: []string{"eu-west-1"}}},
		// An alias describes the key it points to: its ARN, region and replicas.
		{key: "arn:aws:kms:me-central-1:111122223333:alias/training", want: residency.KeyInfo{ARN: "arn:aws:kms:me-central-1:111122223333:key/mrk-1", Region: "me-central-1", CustomerManaged: true, MultiRegion: true, ReplicaRegions: []string{"eu-west-1"}}, wantAsked: "@me-central-1"},
		// A multi-region key without its configuration cannot be placed: an error, never "no replicas".
		{key: "mrk-noconfig", wantErr: errMultiRegionUnknown},
		{key: "arn:aws:kms:me-central-1:111122223333:key/none", wantErr: residency.ErrNotFound},
		{key: "denied", wantErr: residency.ErrAccessDenied},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			var asked []string
			got, err := newTestLocator(&asked).DescribeKey(context.Background(), tt.key)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Region != tt.want.Region || got.CustomerManaged != tt.want.CustomerManaged || !slices.Equal(got.ReplicaRegions, tt.want.ReplicaRegions) ||
				tt.want.ARN != "" && got.ARN != tt.want.ARN || got.MultiRegion != tt.want.MultiRegion {
				t.Fatalf("DescribeKey = %+v, %v; want %+v", got, err, tt.want)
			}
			if tt.wantAsked != "" && (len(asked) != 1 || !strings.HasSuffix(asked[0], tt.wantAsked)) {
				t.Errorf("asked %v, want one call %s", asked, tt.wantAsked)
			}
		})
	}
}

// The Locator and the engine together: a bucket replicating out of the
// jurisdiction is a violation; an unknown bucket fails closed.
func TestLocatorWithPolicy(t *testing.T) {
	p, err := residency.NewPolicy(residency.PolicyConfig{Jurisdiction: "AE", RequireCustomerManagedKeys: boolp(true)})
	if err != nil {
		t.Fatal(err)
	}
	refs := []residency.Ref{
		{Path: "a", Kind: residency.KindS3URI, Value: "s3://uae-data/x"},
		{Path: "b", Kind: residency.KindS3URI, Value: "s3://uae-repl/x"},
		{Path: "c", Kind: residency.KindS3URI, Value: "s3://missing/x"},
		{Path: "d", Kind: residency.KindKMSKey, Value: "alias/aws/s3"},
	}
	vs, err := p.Check(context.Background(), newTestLocator(new([]string)), refs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.Path+":"+v.Rule)
	}
	want := []string{"b:" + residency.RuleS3Replication, "c:" + residency.RuleUnverifiable, "d:" + residency.RuleKMSCustomerManaged}
	if !slices.Equal(got, want) {
		t.Fatalf("violations = %v, want %v\n%s", got, want, residency.Summarize(vs))
	}
}

func TestNewLocatorBuildsRegionalClients(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	c, err := New(context.Background(), Config{Region: "me-central-1"})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLocator(c)
	if l.s3("me-central-1") != LocatorS3API(c.S3) || l.ec2("me-central-1") != LocatorEC2API(c.EC2) {
		t.Error("home region does not reuse the configured clients")
	}
	eu := l.s3("eu-west-1").(S3Client)
	if eu.Options().Region != "eu-west-1" || l.s3("eu-west-1") != LocatorS3API(eu) {
		t.Error("regional S3 client not built once for eu-west-1")
	}
	if e := l.ec2("eu-west-1").(EC2Client); e.Options().Region != "eu-west-1" {
		t.Errorf("regional EC2 client in %s", e.Options().Region)
	}
	if k := l.kms("eu-west-1").(KMSClient); k.Options().Region != "eu-west-1" {
		t.Errorf("regional KMS client in %s", k.Options().Region)
	}
}

// TestLocatorMoto asks moto's S3, KMS and EC2 when moto_server is installed.
func TestLocatorMoto(t *testing.T) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server not on PATH")
	}
	endpoint := startMotoForLocator(t, bin)
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := New(ctx, Config{Region: "me-central-1", Endpoints: map[string]string{"s3": endpoint, "kms": endpoint, "ec2": endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	mkBucket := func(name, region string) {
		t.Helper()
		in := &s3.CreateBucketInput{Bucket: aws.String(name)}
		if region != "us-east-1" {
			in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}
		}
		if _, err := c.ForRegion(region).S3.CreateBucket(ctx, in); err != nil {
			t.Fatalf("creating bucket %s: %v", name, err)
		}
		if _, err := c.ForRegion(region).S3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatalf("versioning bucket %s: %v", name, err)
		}
	}
	mkBucket("uae-data", "me-central-1")
	mkBucket("uae-repl", "me-central-1")
	mkBucket("eu-copy", "eu-central-1")
	mkBucket("virginia", "us-east-1")
	if _, err := c.S3.PutBucketReplication(ctx, &s3.PutBucketReplicationInput{Bucket: aws.String("uae-repl"),
		ReplicationConfiguration: &s3types.ReplicationConfiguration{Role: aws.String("arn:aws:iam::123456789012:role/replication"),
			Rules: []s3types.ReplicationRule{{ID: aws.String("out"), Status: s3types.ReplicationRuleStatusEnabled, Prefix: aws.String(""),
				Destination: &s3types.Destination{Bucket: aws.String("arn:aws:s3:::eu-copy")}}}}}); err != nil {
		t.Fatalf("putting replication: %v", err)
	}
	key, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}

	l := NewLocator(c)
	for bucket, want := range map[string]string{"uae-data": "me-central-1", "eu-copy": "eu-central-1", "virginia": "us-east-1"} {
		if got, err := l.BucketRegion(ctx, bucket); err != nil || got != want {
			t.Errorf("BucketRegion(%s) = %q, %v; want %q", bucket, got, err, want)
		}
	}
	if _, err := l.BucketRegion(ctx, "no-such-bucket"); !errors.Is(err, residency.ErrNotFound) {
		t.Errorf("BucketRegion(no-such-bucket) error = %v, want ErrNotFound", err)
	}
	if got, err := l.BucketReplicationRegions(ctx, "uae-data"); err != nil || len(got) != 0 {
		t.Errorf("replication of uae-data = %v, %v; want none", got, err)
	}
	if got, err := l.BucketReplicationRegions(ctx, "uae-repl"); err != nil || !slices.Equal(got, []string{"eu-central-1"}) {
		t.Errorf("replication of uae-repl = %v, %v; want [eu-central-1]", got, err)
	}
	if id, err := l.ZoneID(ctx, "me-central-1", "me-central-1a"); err != nil || !strings.HasPrefix(id, "mec1-az") {
		t.Errorf("ZoneID(me-central-1a) = %q, %v", id, err)
	}
	info, err := l.DescribeKey(ctx, aws.ToString(key.KeyMetadata.Arn))
	if err != nil || info.Region != "me-central-1" || !info.CustomerManaged {
		t.Errorf("DescribeKey = %+v, %v", info, err)
	}
}

func startMotoForLocator(t *testing.T, bin string) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(lis.Addr().(*net.TCPAddr).Port)
	lis.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", port)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("moto_server log:\n%s", log.String())
		}
	})
	endpoint := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(endpoint + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return endpoint
		}
		select {
		case <-done:
			t.Fatal("moto_server exited early")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto_server did not answer on %s: %v", endpoint, err)
		}
	}
}

func boolp(b bool) *bool { return &b }
