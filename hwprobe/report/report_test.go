package report

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

type fakeS3 struct {
	location string
	putErr   error
	located  *s3.GetBucketLocationInput
	put      *s3.PutObjectInput
	body     []byte
}

func (f *fakeS3) GetBucketLocation(_ context.Context, in *s3.GetBucketLocationInput, _ ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error) {
	f.located = in
	return &s3.GetBucketLocationOutput{LocationConstraint: types.BucketLocationConstraint(f.location)}, nil
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if f.putErr != nil {
		return nil, f.putErr
	}
	f.put = in
	f.body, _ = io.ReadAll(in.Body)
	return &s3.PutObjectOutput{}, nil
}

func sampleReport() Report {
	inv := &probe.Inventory{Schema: probe.SchemaVersion, Hostname: "node-a",
		Host: probe.Host{OnEC2: true, InstanceID: "i-0abc", Region: "me-central-1",
			Identity: &probe.Identity{Document: `{"region":"me-central-1"}`, Signature: "MIAG", Verified: true}}}
	res := &validate.Result{Checks: []validate.Check{{ID: "gpu.count", Status: validate.Pass}}}
	return New(inv, res, Options{Version: "test", ProfileName: "p5", ProfileRegion: "me-central-1",
		ProfileSource: []byte("gpu { count = 8 }"), Now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)})
}

func TestPublish(t *testing.T) {
	const region = "me-central-1"
	const arn = "arn:aws:kms:me-central-1:111122223333:key/1234abcd"
	tests := []struct {
		name     string
		target   Target
		location string
		putErr   error
		wantURI  string
		wantErr  string
		wrongReg bool
		exists   bool // the error is ErrReportExists
	}{
		{name: "prefix", target: Target{URI: "s3://reports/hw/", Region: region, KMSKeyID: arn}, location: region,
			wantURI: "s3://reports/hw/i-0abc/20260301T100000Z.json"},
		{name: "exact key, managed key", target: Target{URI: "s3://reports/a/b.json", Region: region}, location: region,
			wantURI: "s3://reports/a/b.json"},
		{name: "bucket owner", target: Target{URI: "s3://reports/hw/", Region: region, BucketOwner: "111122223333"}, location: region,
			wantURI: "s3://reports/hw/i-0abc/20260301T100000Z.json"},
		{name: "bucket root", target: Target{URI: "s3://reports", Region: region}, location: region,
			wantURI: "s3://reports/i-0abc/20260301T100000Z.json"},
		{name: "bucket in another region", target: Target{URI: "s3://reports/", Region: region}, location: "eu-west-1", wantErr: "is in eu-west-1", wrongReg: true},
		{name: "us-east-1 bucket", target: Target{URI: "s3://reports/", Region: region}, location: "", wantErr: "is in us-east-1", wrongReg: true},
		{name: "key in another region", target: Target{URI: "s3://reports/", Region: region, KMSKeyID: "arn:aws:kms:us-east-1:111122223333:key/x"}, location: region, wantErr: "us-east-1", wrongReg: true},
		{name: "kms arn without a key", target: Target{URI: "s3://reports/", Region: region, KMSKeyID: "arn:aws:kms:me-central-1:111122223333:grant/x"}, location: region, wantErr: "not a KMS key ARN"},
		{name: "kms arn in another partition", target: Target{URI: "s3://reports/", Region: region, KMSKeyID: "arn:aws-cn:kms:cn-north-1:111122223333:key/x"}, location: region, wantErr: "cn-north-1", wrongReg: true},
		{name: "not a kms arn", target: Target{URI: "s3://reports/", Region: region, KMSKeyID: "arn:aws:s3:::x"}, location: region, wantErr: "not a KMS key ARN"},
		{name: "no region", target: Target{URI: "s3://reports/"}, wantErr: "no region"},
		{name: "bad uri", target: Target{URI: "https://reports/", Region: region}, wantErr: "not an s3:// URI"},
		{name: "put fails", target: Target{URI: "s3://reports/", Region: region}, location: region, putErr: errors.New("access denied"), wantErr: "access denied"},
		{name: "key exists", target: Target{URI: "s3://reports/hw/", Region: region}, location: region, exists: true,
			putErr:  &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"},
			wantErr: "s3://reports/hw/i-0abc/20260301T100000Z.json: a report already exists"},
		{name: "conditional write in flight", target: Target{URI: "s3://reports/hw/", Region: region}, location: region, exists: true,
			putErr:  &smithy.GenericAPIError{Code: "ConditionalRequestConflict", Message: "A conflicting conditional operation is currently in progress"},
			wantErr: "s3://reports/hw/i-0abc/20260301T100000Z.json: a report already exists"},
		{name: "wrong bucket owner", target: Target{URI: "s3://reports/", Region: region, BucketOwner: "111122223333"}, location: region,
			putErr: &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}, wantErr: "AccessDenied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeS3{location: tt.location, putErr: tt.putErr}
			uri, err := Publish(context.Background(), f, tt.target, sampleReport())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ErrWrongRegion) != tt.wrongReg || errors.Is(err, ErrReportExists) != tt.exists {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if f.put != nil && tt.putErr == nil {
					t.Error("object written despite the error")
				}
				return
			}
			if err != nil || uri != tt.wantURI {
				t.Fatalf("Publish = %q, %v", uri, err)
			}
			if f.put.ServerSideEncryption != types.ServerSideEncryptionAwsKms {
				t.Errorf("sse = %q", f.put.ServerSideEncryption)
			}
			if (f.put.SSEKMSKeyId != nil) != (tt.target.KMSKeyID != "") {
				t.Errorf("kms key id = %v", f.put.SSEKMSKeyId)
			}
			if aws.ToString(f.put.IfNoneMatch) != "*" {
				t.Errorf("If-None-Match = %v, want * (a report is written once)", f.put.IfNoneMatch)
			}
			if got := aws.ToString(f.put.ExpectedBucketOwner); got != tt.target.BucketOwner || got != aws.ToString(f.located.ExpectedBucketOwner) {
				t.Errorf("expected bucket owner: put %q, locate %q, want %q", got, aws.ToString(f.located.ExpectedBucketOwner), tt.target.BucketOwner)
			}
			var back Report
			if err := json.Unmarshal(f.body, &back); err != nil {
				t.Fatal(err)
			}
			if back.Schema != SchemaVersion || back.Identity == nil || back.Identity.Document == "" || back.Profile.SHA256 == "" || back.Validation == nil {
				t.Errorf("report = %+v", back)
			}
		})
	}
}

// TestPublishEndpointOverride sends a real S3 client to a local server
// through AWS_ENDPOINT_URL_S3 and checks path-style requests and SSE-KMS.
func TestPublishEndpointOverride(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var sse, kmsKey, ifNoneMatch string
	var owners []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		owners = append(owners, r.Header.Get("X-Amz-Expected-Bucket-Owner"))
		if _, ok := r.URL.Query()["location"]; ok {
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">me-central-1</LocationConstraint>`)
			return
		}
		sse = r.Header.Get("X-Amz-Server-Side-Encryption")
		kmsKey = r.Header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id")
		ifNoneMatch = r.Header.Get("If-None-Match")
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("ETag", `"abc"`)
	}))
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")

	c, err := NewS3Client(context.Background(), "me-central-1", true)
	if err != nil {
		t.Fatal(err)
	}
	uri, err := Publish(context.Background(), c, Target{URI: "s3://reports/hw/", Region: "me-central-1", KMSKeyID: "alias/hwprobe", BucketOwner: "111122223333"}, sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	if uri != "s3://reports/hw/i-0abc/20260301T100000Z.json" {
		t.Errorf("uri = %s", uri)
	}
	want := []string{"GET /reports", "PUT /reports/hw/i-0abc/20260301T100000Z.json"}
	if strings.Join(paths, "|") != strings.Join(want, "|") {
		t.Errorf("requests = %v, want %v", paths, want)
	}
	if sse != "aws:kms" || kmsKey != "alias/hwprobe" || ifNoneMatch != "*" {
		t.Errorf("sse %q key %q If-None-Match %q", sse, kmsKey, ifNoneMatch)
	}
	if strings.Join(owners, "|") != "111122223333|111122223333" {
		t.Errorf("x-amz-expected-bucket-owner = %q on each request, want the node's account", owners)
	}
}

// s3Objects is a local S3 bucket store that honours If-None-Match: * on
// PutObject as S3 does: 412 PreconditionFailed, in S3's XML, when the key
// exists.
type s3Objects struct {
	mu      sync.Mutex
	objects map[string][]byte
}

func (o *s3Objects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := r.URL.Query()["location"]; ok {
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">me-central-1</LocationConstraint>`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if _, exists := o.objects[r.URL.Path]; exists && r.Header.Get("If-None-Match") == "*" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-None-Match</Condition><RequestId>1</RequestId><HostId>h</HostId></Error>`)
		return
	}
	o.objects[r.URL.Path] = body
	w.Header().Set("ETag", `"abc"`)
}

// TestPublishWritesOnce: a second report with the same key (the same
// node and generated_at) is refused with ErrReportExists naming the key,
// through a real S3 client, and the first report stays as written.
func TestPublishWritesOnce(t *testing.T) {
	store := &s3Objects{objects: map[string][]byte{}}
	srv := httptest.NewServer(store)
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	ctx := context.Background()
	c, err := NewS3Client(ctx, "me-central-1", true)
	if err != nil {
		t.Fatal(err)
	}
	target := Target{URI: "s3://reports/hw/", Region: "me-central-1"}

	first := sampleReport()
	uri, err := Publish(ctx, c, target, first)
	if err != nil {
		t.Fatal(err)
	}
	const path = "/reports/hw/i-0abc/20260301T100000Z.json"
	written := append([]byte{}, store.objects[path]...)

	second := sampleReport()
	second.Validation.Checks[0].Status = validate.Fail
	_, err = Publish(ctx, c, target, second)
	if !errors.Is(err, ErrReportExists) || !strings.Contains(err.Error(), uri) || !strings.Contains(err.Error(), "PreconditionFailed") {
		t.Fatalf("second Publish to %s: %v, want ErrReportExists naming the key", uri, err)
	}
	if got := store.objects[path]; string(got) != string(written) || len(store.objects) != 1 {
		t.Errorf("the first report changed:\n%s\nwant\n%s", got, written)
	}
}
