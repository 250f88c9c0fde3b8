package acctest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

func TestMain(m *testing.M) { Main(m) }

// sdkConfig is an SDK configuration for region without retries, so that a
// test sees every injected fault itself.
func sdkConfig(region string) aws.Config {
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
	}
}

func ec2Client(h *Harness) *ec2.Client {
	return ec2.NewFromConfig(sdkConfig(Region), func(o *ec2.Options) { o.BaseEndpoint = aws.String(h.URL) })
}

func s3Client(h *Harness, region string) *s3.Client {
	return s3.NewFromConfig(sdkConfig(region), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(h.URL)
		o.UsePathStyle = true
	})
}

func testContext(t *testing.T) context.Context {
	// Two minutes: moto answers an unfiltered DescribeImages (thousands
	// of images) in seconds alone, but took over 30 s under make test's
	// load on a 2-vCPU host. Nothing here is judged by its speed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestMoto_startAndReset(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	fix, err := h.Clients(ctx, "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = fix.S3.CreateBucket(ctx, &s3.CreateBucketInput{
		Bucket:                    aws.String("outside-the-uae"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraintEuWest1},
	})
	if err != nil {
		t.Fatalf("creating fixture bucket: %v", err)
	}
	loc, err := s3Client(h, Region).GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("outside-the-uae")})
	if err != nil {
		t.Fatalf("GetBucketLocation: %v", err)
	}
	if loc.LocationConstraint != s3types.BucketLocationConstraintEuWest1 {
		t.Errorf("location = %q, want eu-west-1", loc.LocationConstraint)
	}
	if w := h.Shim.Writes(); len(w) != 0 {
		t.Errorf("fixture calls counted as writes: %v", w)
	}
	if !strings.Contains(h.Moto.Log(), "outside-the-uae") {
		t.Errorf("moto log does not show the request:\n%s", h.Moto.Log())
	}

	if err := h.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := fix.S3.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Buckets) != 0 {
		t.Errorf("buckets after reset: %d, want 0", len(out.Buckets))
	}
	if got := len(h.Shim.Log()); got != 1 {
		t.Errorf("shim log after reset has %d calls, want 1 (ListBuckets): %v", got, h.Shim.Log())
	}
}

func TestShim_forwardsDescribeInstanceTypes(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	out, err := ec2Client(h).DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []ec2types.InstanceType{"p5en.48xlarge"},
	})
	if err != nil {
		t.Fatalf("DescribeInstanceTypes: %v", err)
	}
	if len(out.InstanceTypes) != 1 || out.InstanceTypes[0].GpuInfo == nil {
		t.Fatalf("want p5en.48xlarge with GPU info, got %+v", out.InstanceTypes)
	}
	calls := h.Shim.Calls("ec2", "DescribeInstanceTypes")
	if len(calls) != 1 {
		t.Fatalf("logged DescribeInstanceTypes calls = %d, want 1; log: %v", len(calls), h.Shim.Log())
	}
	c := calls[0]
	if c.Write || c.Region != Region || c.Status != http.StatusOK || c.Source != "moto" || c.Method != http.MethodPost {
		t.Errorf("call = %+v, want a read in %s answered 200 by moto", c, Region)
	}
	if w := h.Shim.Writes(); len(w) != 0 {
		t.Errorf("writes = %v, want none", w)
	}
}

func TestShim_s3Actions(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	c := s3Client(h, Region)
	bucket := aws.String("residency-data")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{
		Bucket:                    bucket,
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(Region)},
	}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	if _, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: bucket}); err != nil {
		t.Fatalf("GetBucketLocation: %v", err)
	}
	// moto answers ReplicationConfigurationNotFoundError: still a logged read.
	_, _ = c.GetBucketReplication(ctx, &s3.GetBucketReplicationInput{Bucket: bucket})
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("reports/node-1.json"), Body: strings.NewReader("{}")}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String("reports/node-1.json")}); err != nil {
		t.Fatalf("DeleteObject: %v", err)
	}

	var got []string
	for _, c := range h.Shim.Log() {
		w := "read"
		if c.Write {
			w = "write"
		}
		got = append(got, c.Service+"."+c.Action+":"+w)
	}
	want := []string{
		"s3.CreateBucket:write",
		"s3.GetBucketLocation:read",
		"s3.GetBucketReplication:read",
		"s3.PutObject:write",
		"s3.DeleteObject:write",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("log = %v\nwant  %v", got, want)
	}
	if n := len(h.Shim.Writes()); n != 3 {
		t.Errorf("writes = %d, want 3", n)
	}
}

func TestShim_handle(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)

	type placementGroup struct {
		GroupName string `xml:"groupName"`
		Strategy  string `xml:"strategy"`
		State     string `xml:"state"`
	}
	var gotName string
	t.Cleanup(h.Shim.Handle("ec2", "DescribePlacementGroups", func(w http.ResponseWriter, r *Request) {
		gotName = r.Form.Get("GroupName.1")
		WriteEC2XML(w, r.Action, struct {
			Groups []placementGroup `xml:"placementGroupSet>item"`
		}{[]placementGroup{{GroupName: gotName, Strategy: "cluster", State: "available"}}})
	}))
	t.Cleanup(h.Shim.Handle("sagemaker", "DeleteFeatureGroup", func(w http.ResponseWriter, r *Request) {
		var in struct{ FeatureGroupName string }
		if err := r.DecodeJSON(&in); err != nil {
			WriteAWSError(w, r, http.StatusBadRequest, "ValidationException", err.Error())
			return
		}
		WriteAWSError(w, r, http.StatusBadRequest, "ResourceNotFound", "feature group "+in.FeatureGroupName+" not found")
	}))

	out, err := ec2Client(h).DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"train"}})
	if err != nil {
		t.Fatalf("DescribePlacementGroups: %v", err)
	}
	if gotName != "train" {
		t.Errorf("handler saw GroupName.1 = %q, want train", gotName)
	}
	if len(out.PlacementGroups) != 1 || aws.ToString(out.PlacementGroups[0].GroupName) != "train" || out.PlacementGroups[0].Strategy != ec2types.PlacementStrategyCluster {
		t.Errorf("placement groups = %+v", out.PlacementGroups)
	}

	sm := sagemaker.NewFromConfig(sdkConfig(Region), func(o *sagemaker.Options) { o.BaseEndpoint = aws.String(h.URL) })
	_, err = sm.DeleteFeatureGroup(ctx, &sagemaker.DeleteFeatureGroupInput{FeatureGroupName: aws.String("customers")})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ResourceNotFound" || !strings.Contains(apiErr.ErrorMessage(), "customers") {
		t.Errorf("DeleteFeatureGroup error = %v, want ResourceNotFound naming customers", err)
	}

	for _, c := range h.Shim.Log() {
		if c.Source != "shim" {
			t.Errorf("call %v was not served by the shim", c)
		}
	}
	if w := h.Shim.Writes(); len(w) != 1 || w[0].Action != "DeleteFeatureGroup" || w[0].Status != http.StatusBadRequest {
		t.Errorf("writes = %v, want the DeleteFeatureGroup attempt", w)
	}
}

func TestShim_injectError(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	c := ec2Client(h)
	run := func(zone string) error {
		_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{
			ImageId:      aws.String("ami-12c6146b"),
			InstanceType: "g5.xlarge",
			MinCount:     aws.Int32(1),
			MaxCount:     aws.Int32(1),
			Placement:    &ec2types.Placement{AvailabilityZone: aws.String(zone)},
		})
		return err
	}
	wantCode := func(err error, code string) {
		t.Helper()
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != code {
			t.Fatalf("error = %v, want %s", err, code)
		}
	}

	h.Shim.InjectError("ec2", "RunInstances", "InsufficientInstanceCapacity", "no g5.xlarge capacity", 2)
	wantCode(run("me-central-1a"), "InsufficientInstanceCapacity")
	wantCode(run("me-central-1a"), "InsufficientInstanceCapacity")
	if err := run("me-central-1a"); err != nil {
		t.Fatalf("third RunInstances: %v", err)
	}

	// Matched on the request: only one zone is out of capacity.
	h.Shim.Inject(Fault{
		Service: "ec2", Action: "RunInstances", Code: "InsufficientInstanceCapacity", Message: "zone a is full",
		Match: func(r *Request) bool { return r.Form.Get("Placement.AvailabilityZone") == "me-central-1a" },
	})
	wantCode(run("me-central-1a"), "InsufficientInstanceCapacity")
	if err := run("me-central-1b"); err != nil {
		t.Fatalf("RunInstances in another zone: %v", err)
	}
	wantCode(run("me-central-1a"), "InsufficientInstanceCapacity")

	var sources []string
	for _, c := range h.Shim.Calls("ec2", "RunInstances") {
		sources = append(sources, c.Source)
	}
	if got, want := strings.Join(sources, ","), "fault,fault,moto,fault,moto,fault"; got != want {
		t.Errorf("sources = %s, want %s", got, want)
	}

	h.Shim.Reset()
	if err := run("me-central-1a"); err != nil {
		t.Errorf("RunInstances after Reset: %v", err)
	}
}

// TestShim_errorProtocols checks that each protocol's injected error is
// understood by the SDK.
func TestShim_errorProtocols(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	cfg := sdkConfig(Region)
	ep := aws.String(h.URL)
	tests := []struct {
		service, action, code string
		call                  func() error
	}{
		{"ec2", "DescribeInstances", "UnauthorizedOperation", func() error {
			_, err := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = ep }).DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
			return err
		}},
		{"sagemaker", "DescribeFeatureGroup", "ResourceNotFound", func() error {
			_, err := sagemaker.NewFromConfig(cfg, func(o *sagemaker.Options) { o.BaseEndpoint = ep }).
				DescribeFeatureGroup(ctx, &sagemaker.DescribeFeatureGroupInput{FeatureGroupName: aws.String("x")})
			return err
		}},
		{"s3", "GetBucketLocation", "AccessDenied", func() error {
			_, err := s3Client(h, Region).GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("b")})
			return err
		}},
		{"sts", "GetCallerIdentity", "ExpiredToken", func() error {
			_, err := sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = ep }).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			h.Shim.InjectError(tt.service, tt.action, tt.code, "injected by the test", 1)
			err := tt.call()
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.code || apiErr.ErrorMessage() != "injected by the test" {
				t.Fatalf("error = %v, want %s: injected by the test", err, tt.code)
			}
			_ = tt.call() // the fault is used up: moto or a double answers
			calls := h.Shim.Calls(tt.service, tt.action)
			if len(calls) != 2 || calls[0].Source != "fault" || calls[1].Source == "fault" {
				t.Errorf("calls = %v, want one fault, then none", calls)
			}
		})
	}
}

func TestShim_controlAPI(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	do := func(method, path, body string, out any) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, h.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: status %s", method, path, resp.Status)
		}
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
	}

	do(http.MethodPost, "/shim/faults", `{"service":"s3","action":"CreateBucket","code":"TooManyBuckets","message":"quota","times":1}`, nil)
	c := s3Client(h, Region)
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{
		Bucket:                    aws.String("b1"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(Region)},
	})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "TooManyBuckets" {
		t.Fatalf("CreateBucket error = %v, want TooManyBuckets", err)
	}
	if _, err := c.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Fatal(err)
	}

	var all, writes []Call
	do(http.MethodGet, "/shim/log", "", &all)
	do(http.MethodGet, "/shim/log?writes=true", "", &writes)
	if len(all) != 2 || len(writes) != 1 || writes[0].Action != "CreateBucket" || writes[0].Status != http.StatusBadRequest {
		t.Errorf("log = %v, writes = %v", all, writes)
	}

	do(http.MethodPost, "/shim/reset", "", nil)
	do(http.MethodGet, "/shim/log", "", &all)
	if len(all) != 0 {
		t.Errorf("log after reset = %v, want empty", all)
	}
}

func TestProviderConfig(t *testing.T) {
	h := &Harness{URL: "http://127.0.0.1:4566"}
	got := h.ProviderConfig("excluded_zone_ids = [\"mec1-az2\"]\nmode = \"audit\"")
	for _, want := range []string{
		`provider "mlplatform" {`,
		`region = "me-central-1"`,
		"    jurisdiction = \"AE\"\n    excluded_zone_ids = [\"mec1-az2\"]\n    mode = \"audit\"\n  }\n}\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	// Endpoint lines are aligned on "=" (as terraform fmt writes them): the
	// padding depends on the longest service name.
	for _, svc := range []string{"ec2", "sagemaker", "s3", "autoscaling", "applicationautoscaling"} {
		if !regexp.MustCompile(`\n\s+` + svc + ` +=\s"http://127\.0\.0\.1:4566"\n`).MatchString(got) {
			t.Errorf("config lacks the %s endpoint:\n%s", svc, got)
		}
	}
}

func TestFindTerraform(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "terraform")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExe := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env, want string
		wantErr         bool
	}{
		{name: "from TF_ACC_TERRAFORM_PATH", env: exe, want: exe},
		{name: "missing", env: filepath.Join(dir, "nope"), wantErr: true},
		{name: "not executable", env: notExe, wantErr: true},
		{name: "directory", env: dir, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TF_ACC_TERRAFORM_PATH", tt.env)
			got, err := FindTerraform(context.Background())
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("FindTerraform() = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// The pool gives each test an emulator of its own: no more emulators run
// than its size, a test waits for one to be given back, and a harness
// given back is handed out again.
func TestSuite_pool(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 to run it against the AWS emulator")
	}
	s := newSuite(2)
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := testContext(t)
	a, err := s.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a.URL == b.URL {
		t.Fatalf("two tests share an emulator: %s and %s", a.URL, b.URL)
	}
	got := make(chan *Harness)
	go func() {
		c, err := s.acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	select {
	case c := <-got:
		t.Fatalf("a third emulator was handed out from a pool of two: %v", c.URL)
	case <-time.After(300 * time.Millisecond):
	}
	s.release(b)
	select {
	case c := <-got:
		if c != b {
			t.Errorf("handed out %s, want the one given back, %s", c.URL, b.URL)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a test waited on after an emulator was given back")
	}
	if n := len(s.all); n != 2 {
		t.Errorf("%d emulators started, want 2", n)
	}
}

// Each parallel test reaches its own emulator: what one creates, the other
// does not see.
func TestSetup_isolated(t *testing.T) {
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			h := ParallelEmulator(t)
			if Of(t) != h {
				t.Fatalf("Of(t) = %v, want the test's harness %s", Of(t), h.URL)
			}
			c := s3Client(h, Region)
			ctx := testContext(t)
			if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("isolated-" + name),
				CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(Region)}}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond) // both buckets exist, if they share an emulator
			out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Buckets) != 1 || aws.ToString(out.Buckets[0].Name) != "isolated-"+name {
				var names []string
				for _, b := range out.Buckets {
					names = append(names, aws.ToString(b.Name))
				}
				t.Errorf("buckets %v, want only isolated-%s", names, name)
			}
		})
	}
}

// A client left on the shared AWS_ENDPOINT_URL is refused at once, in its
// service's protocol, with an error that names the mistake.
func TestRefusingEndpoint(t *testing.T) {
	r, err := startRefusingEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.srv.Close() })
	ctx := testContext(t)
	c := ec2.NewFromConfig(sdkConfig(Region), func(o *ec2.Options) { o.BaseEndpoint = aws.String(r.URL) })
	_, err = c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "NoEmulatorForThisTest" || !strings.Contains(apiErr.ErrorMessage(), "acctest.SetupSerial") {
		t.Errorf("EC2: %v, want NoEmulatorForThisTest naming the fix", err)
	}
	s := s3.NewFromConfig(sdkConfig(Region), func(o *s3.Options) { o.BaseEndpoint = aws.String(r.URL); o.UsePathStyle = true })
	_, err = s.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("b")})
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "NoEmulatorForThisTest" {
		t.Errorf("S3: %v, want NoEmulatorForThisTest", err)
	}
}
