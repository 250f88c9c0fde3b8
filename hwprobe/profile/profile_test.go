package profile

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestLoadExample(t *testing.T) {
	src, err := os.ReadFile("testdata/p5en.hcl")
	if err != nil {
		t.Fatal(err)
	}
	p, diags := Load("p5en.hcl", src)
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics("p5en.hcl", src, diags))
	}
	want := &Profile{
		Version: 1,
		Name:    "p5en-training",
		Host:    &Host{Region: "me-central-1", ZoneIDs: []string{"mec1-az1", "mec1-az3"}, InstanceType: "p5en.48xlarge"},
		CPU:     &CPU{MinCores: 96, MinMemoryGiB: 1900, Features: []string{"avx512f", "avx512_bf16", "amx_tile"}},
		GPU: &GPU{Model: "H200", Count: 8, MinMemoryGiB: 140, MinNVLinkLinks: 18, MIGEnabled: ptr(false),
			ECCEnabled: ptr(true), MinPCIeGen: 5, MinPCIeWidth: 16},
		EFA: &EFA{Count: 16},
		Benchmarks: []Benchmark{
			{Name: "gpu_gemm_bf16", MinEfficiency: ptr(0.6)},
			{Name: "gpu_mlp_infer_p99", Max: ptr(25.0), Optional: true},
		},
		Report: &Report{S3URI: "s3://uae-hwprobe-reports/clusters/train-a/", KMSKeyID: "arn:aws:kms:me-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("Load:\n got %#v\nwant %#v", p, want)
	}
	if p.Region() != "me-central-1" {
		t.Errorf("Region() = %q", p.Region())
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // substrings of the formatted diagnostics
	}{
		{"syntax", "gpu {\n  count = \n}\n", []string{"bad.hcl:2", "Invalid expression"}},
		{"unknown attribute", "gpu {\n  count = 8\n  modle = \"H100\"\n}\n", []string{"bad.hcl:3:3", "Unsupported argument", "modle"}},
		{"wrong type", "gpu {\n  count = \"eight\"\n}\n", []string{"bad.hcl:2:12", "number is required"}},
		{"missing count", "gpu {\n  model = \"H100\"\n}\n", []string{"bad.hcl:1", "count"}},
		{"bad zone", "host {\n  zone_ids = [\"me-central-1a\"]\n}\n", []string{"bad.hcl:2:14", "Invalid zone id", "me-central-1a"}},
		{"unknown zone prefix", "host {\n  zone_ids = [\"xyz9-az1\"]\n}\n", []string{"bad.hcl:2:14", "Invalid zone id", "unknown region prefix"}},
		{"negative", "cpu {\n  min_cores = -4\n}\n", []string{"bad.hcl:2:15", "must not be negative"}},
		{"efficiency", "benchmark \"cpu_sgemm\" {\n  min_efficiency = 60\n}\n", []string{"bad.hcl:2:20", "fraction of the peak"}},
		{"duplicate benchmark", "benchmark \"cpu_sgemm\" {}\nbenchmark \"cpu_sgemm\" {}\n", []string{"bad.hcl:2:1", "Duplicate benchmark"}},
		{"unknown benchmark", "benchmark \"gpu_infer_latency_p99\" {\n  optional = true\n}\n", []string{"bad.hcl:1:1", "Unknown benchmark", "gpu_mlp_infer_p99"}},
		{"bad s3", "report {\n  s3_uri = \"https://bucket/x\"\n}\n", []string{"bad.hcl:2:12", "not an s3:// URI"}},
		{"version", "version = 7\n", []string{"bad.hcl:1:11", "Unsupported profile version"}},
		{"feature case", "cpu {\n  features = [\"AVX2\"]\n}\n", []string{"bad.hcl:2", "lowercase"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, diags := Load("bad.hcl", []byte(tt.src))
			if !diags.HasErrors() || p != nil {
				t.Fatalf("Load accepted %q", tt.src)
			}
			got := FormatDiagnostics("bad.hcl", []byte(tt.src), diags)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("diagnostics lack %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestRenderRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		p    *Profile
	}{
		{"empty", &Profile{Version: 1}},
		{"cpu only", &Profile{Version: 1, CPU: &CPU{Vendor: "GenuineIntel", MinCores: 4, MinThreads: 8, MinMemoryGiB: 15.5, Features: []string{"avx2"}}}},
		{"full", &Profile{
			Version: 1, Name: `odd "name" ${x} %{y} \ tab	é`, OptionalChecks: []string{"gpu.xid"},
			Host: &Host{Region: "me-central-1", ZoneIDs: []string{"mec1-az1"}, InstanceType: "p5.48xlarge", RequireVerifiedIdentity: ptr(false)},
			GPU: &GPU{Model: "H100", Count: 8, MinMemoryGiB: 79.5, MinNVLinkLinks: 18, MIGEnabled: ptr(true), ECCEnabled: ptr(false),
				MaxUncorrectedErrors: ptr(0), MinPCIeGen: 5, MinPCIeWidth: 16, MaxTemperatureC: 85, XIDSeconds: 5},
			EFA:        &EFA{Count: 32, MinActivePort: 32, InfiniBand: 1},
			Benchmarks: []Benchmark{{Name: "cpu_sgemm", Min: ptr(100.0), MinEfficiency: ptr(0.5), Max: ptr(1e6), Optional: true}},
			Report:     &Report{S3URI: "s3://bucket/prefix", KMSKeyID: "alias/hwprobe"},
		}},
		{"gpu count zero", &Profile{Version: 1, GPU: &GPU{Count: 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := Render(tt.p)
			got, diags := Load("rendered.hcl", src)
			if diags.HasErrors() {
				t.Fatalf("%s\n%s", FormatDiagnostics("rendered.hcl", src, diags), src)
			}
			if !reflect.DeepEqual(got, tt.p) {
				t.Errorf("round trip:\n got %#v\nwant %#v\n%s", got, tt.p, src)
			}
		})
	}
}

func TestRenderExampleStable(t *testing.T) {
	src, err := os.ReadFile("testdata/p5en.hcl")
	if err != nil {
		t.Fatal(err)
	}
	p, diags := Load("p5en.hcl", src)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	once := Render(p)
	p2, diags := Load("r.hcl", once)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if twice := Render(p2); string(twice) != string(once) {
		t.Errorf("Render not stable:\n%s\n---\n%s", once, twice)
	}
}

func TestSplitS3URI(t *testing.T) {
	tests := []struct {
		uri, bucket, key string
		ok               bool
	}{
		{"s3://bucket/a/b", "bucket", "a/b", true},
		{"s3://bucket", "bucket", "", true},
		{"s3://Bucket/x", "", "", false},
		{"s3:///x", "", "", false},
		{"http://bucket/x", "", "", false},
		{"s3://my..bucket/x", "", "", false},  // S3 naming rules, from internal/residency
		{"s3://192.168.5.4/x", "", "", false}, // an IP address is no bucket name
		{"s3://bucket-/x", "", "", false},     // must end with a letter or digit
	}
	for _, tt := range tests {
		b, k, err := SplitS3URI(tt.uri)
		if (err == nil) != tt.ok || b != tt.bucket || k != tt.key {
			t.Errorf("SplitS3URI(%q) = %q, %q, %v", tt.uri, b, k, err)
		}
	}
}

func FuzzLoad(f *testing.F) {
	if src, err := os.ReadFile("testdata/p5en.hcl"); err == nil {
		f.Add(src)
	}
	f.Add([]byte("gpu {\n  count = 8\n}\n"))
	f.Add([]byte("benchmark \"a\" { min = 1 }\n"))
	f.Add([]byte("host { zone_ids = [\"mec1-az1\"] }"))
	f.Add([]byte("name = \"${x}\""))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, diags := Load("fuzz.hcl", src)
		_ = FormatDiagnostics("fuzz.hcl", src, diags)
		if diags.HasErrors() {
			return
		}
		out := Render(p)
		p2, diags := Load("rendered.hcl", out)
		if diags.HasErrors() {
			t.Fatalf("rendered profile does not load: %s\n%s", diags, out)
		}
		if string(Render(p2)) != string(out) {
			t.Fatalf("render not stable:\n%s", out)
		}
	})
}

func TestIsOptional(t *testing.T) {
	p := &Profile{OptionalChecks: []string{"gpu.xid", "host.*"}}
	tests := map[string]bool{"gpu.xid": true, "gpu.xids": false, "host.region": true, "host": false, "hostx.region": false, "gpu.count": false}
	for id, want := range tests {
		if got := p.IsOptional(id); got != want {
			t.Errorf("IsOptional(%q) = %v", id, got)
		}
	}
}
