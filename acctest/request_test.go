package acctest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestS3Action(t *testing.T) {
	tests := []struct {
		method, target, copySource, want string
	}{
		{"GET", "/", "", "ListBuckets"},
		{"PUT", "/data", "", "CreateBucket"},
		{"HEAD", "/data", "", "HeadBucket"},
		{"DELETE", "/data", "", "DeleteBucket"},
		{"GET", "/data?location", "", "GetBucketLocation"},
		{"GET", "/data?location=", "", "GetBucketLocation"},
		{"GET", "/data?replication", "", "GetBucketReplication"},
		{"PUT", "/data?replication", "", "PutBucketReplication"},
		{"DELETE", "/data?replication", "", "DeleteBucketReplication"},
		{"PUT", "/data?versioning", "", "PutBucketVersioning"},
		{"GET", "/data?encryption", "", "GetBucketEncryption"},
		{"PUT", "/data?publicAccessBlock", "", "PutPublicAccessBlock"},
		{"GET", "/data?policyStatus", "", "GetBucketPolicyStatus"},
		{"GET", "/data?tagging", "", "GetBucketTagging"},
		{"GET", "/data?metrics", "", "ListBucketMetricsConfigurations"},
		{"GET", "/data?metrics&id=m1", "", "GetBucketMetricsConfiguration"},
		{"GET", "/data?list-type=2&prefix=a", "", "ListObjectsV2"},
		{"GET", "/data", "", "ListObjects"},
		{"GET", "/data?versions", "", "ListObjectVersions"},
		{"POST", "/data?delete", "", "DeleteObjects"},
		{"PUT", "/data/reports/a.json", "", "PutObject"},
		{"PUT", "/data/reports/a.json", "/other/b.json", "CopyObject"},
		{"GET", "/data/reports/a.json", "", "GetObject"},
		{"HEAD", "/data/reports/a.json", "", "HeadObject"},
		{"DELETE", "/data/reports/a.json", "", "DeleteObject"},
		{"GET", "/data/a.json?tagging", "", "GetObjectTagging"},
		{"PUT", "/data/a.json?tagging", "", "PutObjectTagging"},
		{"POST", "/data/a.json?uploads", "", "CreateMultipartUpload"},
		{"PUT", "/data/a.json?partNumber=1&uploadId=u", "", "UploadPart"},
		{"POST", "/data/a.json?uploadId=u", "", "CompleteMultipartUpload"},
		{"DELETE", "/data/a.json?uploadId=u", "", "AbortMultipartUpload"},
		{"GET", "/data/a.json?uploadId=u", "", "ListParts"},
		{"PUT", "/data/a.json?x-id=PutObject", "", "PutObject"},
		{"GET", "/data/a.json?x-id=GetObject", "", "GetObject"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			u, err := url.Parse(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			if tt.copySource != "" {
				h.Set("X-Amz-Copy-Source", tt.copySource)
			}
			if got := s3Action(tt.method, u, h); got != tt.want {
				t.Errorf("s3Action() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseRequest(t *testing.T) {
	const scope = "AWS4-HMAC-SHA256 Credential=testing/20260101/%s/%s/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc"
	auth := func(region, service string) string {
		return strings.Replace(strings.Replace(scope, "%s", region, 1), "%s", service, 1)
	}
	tests := []struct {
		name        string
		method, url string
		headers     map[string]string
		body        string
		service     string
		region      string
		action      string
		protocol    Protocol
		write       bool
	}{
		{
			name: "ec2 query", method: "POST", url: "/",
			headers: map[string]string{"Authorization": auth("me-central-1", "ec2"), "Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
			body:    "Action=RunInstances&Version=2016-11-15&Placement.AvailabilityZone=me-central-1a",
			service: "ec2", region: "me-central-1", action: "RunInstances", protocol: ProtocolEC2Query, write: true,
		},
		{
			name: "ec2 read", method: "POST", url: "/",
			headers: map[string]string{"Authorization": auth("me-central-1", "ec2"), "Content-Type": "application/x-www-form-urlencoded"},
			body:    "Action=DescribeInstanceTypeOfferings&Version=2016-11-15",
			service: "ec2", region: "me-central-1", action: "DescribeInstanceTypeOfferings", protocol: ProtocolEC2Query,
		},
		{
			name: "sts query", method: "POST", url: "/",
			headers: map[string]string{"Authorization": auth("us-east-1", "sts"), "Content-Type": "application/x-www-form-urlencoded"},
			body:    "Action=GetCallerIdentity&Version=2011-06-15",
			service: "sts", region: "us-east-1", action: "GetCallerIdentity", protocol: ProtocolQuery,
		},
		{
			name: "sagemaker json", method: "POST", url: "/",
			headers: map[string]string{"Authorization": auth("me-central-1", "sagemaker"), "X-Amz-Target": "SageMaker.CreateFeatureGroup", "Content-Type": "application/x-amz-json-1.1"},
			body:    `{"FeatureGroupName":"customers"}`,
			service: "sagemaker", region: "me-central-1", action: "CreateFeatureGroup", protocol: ProtocolJSON, write: true,
		},
		{
			name: "kms json", method: "POST", url: "/",
			headers: map[string]string{"Authorization": auth("me-central-1", "kms"), "X-Amz-Target": "TrentService.DescribeKey"},
			service: "kms", region: "me-central-1", action: "DescribeKey", protocol: ProtocolJSON,
		},
		{
			name: "s3 rest", method: "GET", url: "/bucket?location",
			headers: map[string]string{"Authorization": auth("eu-west-1", "s3")},
			service: "s3", region: "eu-west-1", action: "GetBucketLocation", protocol: ProtocolRESTXML,
		},
		{
			name: "s3 presigned", method: "PUT", url: "/bucket/key?X-Amz-Credential=testing%2F20260101%2Fme-central-1%2Fs3%2Faws4_request&X-Amz-Signature=abc",
			service: "s3", region: "me-central-1", action: "PutObject", protocol: ProtocolRESTXML, write: true,
		},
		{
			name: "unsigned", method: "GET", url: "/moto-api/",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hr, err := http.NewRequest(tt.method, "http://127.0.0.1"+tt.url, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.headers {
				hr.Header.Set(k, v)
			}
			r := parseRequest(hr, []byte(tt.body))
			if r.Service != tt.service || r.Region != tt.region || r.Action != tt.action || r.Protocol != tt.protocol {
				t.Errorf("parsed %q %q %q %q; want %q %q %q %q", r.Service, r.Region, r.Action, r.Protocol, tt.service, tt.region, tt.action, tt.protocol)
			}
			if got := IsWrite(r.Service, r.Action, tt.method); got != tt.write {
				t.Errorf("IsWrite = %v, want %v", got, tt.write)
			}
		})
	}
}

func TestIsWrite(t *testing.T) {
	tests := []struct {
		service, action, method string
		want                    bool
	}{
		{"ec2", "RunInstances", "POST", true},
		{"ec2", "TerminateInstances", "POST", true},
		{"ec2", "CreatePlacementGroup", "POST", true},
		{"ec2", "CreateTags", "POST", true},
		{"ec2", "AuthorizeSecurityGroupIngress", "POST", true},
		{"ec2", "DescribeInstances", "POST", false},
		{"ec2", "GetConsoleOutput", "POST", false},
		{"sagemaker", "UpdateEndpoint", "POST", true},
		{"sagemaker", "DeleteFeatureGroup", "POST", true},
		{"sagemaker", "ListFeatureGroups", "POST", false},
		{"kms", "TagResource", "POST", true},
		{"kms", "EnableKeyRotation", "POST", true},
		{"ssm", "GetParameter", "POST", false},
		{"sts", "GetCallerIdentity", "POST", false},
		{"ec2", "Runtime", "POST", false}, // a verb must be a whole word
		{"s3", "GetBucketLocation", "GET", false},
		{"s3", "HeadObject", "HEAD", false},
		{"s3", "PutObject", "PUT", true},
		{"s3", "DeleteObjects", "POST", true},
		{"s3", "DeleteBucket", "DELETE", true},
	}
	for _, tt := range tests {
		if got := IsWrite(tt.service, tt.action, tt.method); got != tt.want {
			t.Errorf("IsWrite(%s, %s, %s) = %v, want %v", tt.service, tt.action, tt.method, got, tt.want)
		}
	}
}

func TestInnerXML(t *testing.T) {
	type item struct {
		Name string `xml:"groupName"`
	}
	tests := []struct {
		name string
		body any
		want string
	}{
		{"nil", nil, ""},
		{"string", "<return>true</return>", "<return>true</return>"},
		{"struct", struct {
			Items []item `xml:"placementGroupSet>item"`
		}{[]item{{"a"}, {"b"}}}, "<placementGroupSet><item><groupName>a</groupName></item><item><groupName>b</groupName></item></placementGroupSet>"},
		{"empty struct", struct{}{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := innerXML(tt.body)
			if err != nil || string(got) != tt.want {
				t.Errorf("innerXML() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestLogBufferSince(t *testing.T) {
	b := newLogBuffer(8)
	_, _ = b.Write([]byte("abcd"))
	off := b.Offset()
	_, _ = b.Write([]byte("efgh"))
	if got := b.Since(off); got != "efgh" {
		t.Errorf("Since = %q, want efgh", got)
	}
	_, _ = b.Write([]byte("ijklmnop"))
	if got := b.Since(off); !strings.HasPrefix(got, "[...") || !strings.HasSuffix(got, "ijklmnop") {
		t.Errorf("Since after overflow = %q", got)
	}
}

func TestShim_handlerOverride(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "moto")
	}))
	defer upstream.Close()
	s, err := StartShim(upstream.URL, ShimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	call := func() string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/", strings.NewReader("{}"))
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=testing/20260101/me-central-1/sagemaker/aws4_request, SignedHeaders=host, Signature=x")
		req.Header.Set("X-Amz-Target", "SageMaker.UpdateEndpoint")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	answer := func(s string) HandlerFunc {
		return func(w http.ResponseWriter, _ *Request) { _, _ = io.WriteString(w, s) }
	}

	removeA := s.Handle("sagemaker", "UpdateEndpoint", answer("a"))
	removeB := s.Handle("sagemaker", "UpdateEndpoint", answer("b"))
	steps := []struct {
		do   func()
		want string
	}{
		{func() {}, "b"},
		{removeB, "a"},
		{removeB, "a"}, // removing twice is harmless
		{removeA, "moto"},
	}
	for i, st := range steps {
		st.do()
		if got := call(); got != st.want {
			t.Errorf("step %d: answered by %q, want %q", i, got, st.want)
		}
	}
	if got := len(s.Calls("sagemaker", "UpdateEndpoint")); got != len(steps) {
		t.Errorf("logged %d calls, want %d", got, len(steps))
	}
}
