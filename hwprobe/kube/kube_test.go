package kube

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct{ in, want string }{
		// GFD's product names (NVML names with spaces replaced by '-').
		{"NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"},
		{"NVIDIA H200", "NVIDIA-H200"},
		{"NVIDIA A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB"},
		{"NVIDIA  H100   NVL", "NVIDIA-H100-NVL"},
		{"Tesla T4", "Tesla-T4"},
		{"NVIDIA GeForce RTX 4090 (rev a1)", "NVIDIA-GeForce-RTX-4090-rev-a1"},
		{"passed", "passed"},
		{"", ""},
		{"   ", ""},
		{"-._", ""},
		{"  -lead and trail- ", "lead-and-trail"},
		{"H100/80GB:HBM3", "H10080GBHBM3"},
		{"café GPU", "caf-GPU"},
		{"tab\tseparated", "tab-separated"},
		{"line\nbreak", "linebreak"},
		{long, long[:63]},
		{strings.Repeat("a", 62) + "-b", strings.Repeat("a", 62)}, // cut at 63 leaves a trailing '-'
		{"x" + strings.Repeat("é", 80), "x"},
	}
	for _, tt := range tests {
		got := LabelValue(tt.in)
		if got != tt.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !ValidLabelValue(got) {
			t.Errorf("LabelValue(%q) = %q is not a valid label value", tt.in, got)
		}
	}
}

func TestValidLabelValue(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"", true},
		{"a", true},
		{"NVIDIA-H100-80GB-HBM3", true},
		{"a.b_c-d", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"-a", false},
		{"a-", false},
		{"a b", false},
		{"a/b", false},
		{"é", false},
	} {
		if got := ValidLabelValue(tt.v); got != tt.want {
			t.Errorf("ValidLabelValue(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestValidateLabelKey(t *testing.T) {
	for _, tt := range []struct {
		key string
		ok  bool
	}{
		{LabelStatus, true},
		{LabelGPUProduct, true},
		{LabelCluster, true},
		{TaintKey, true},
		{"plain", true},
		{"feature.node.kubernetes.io/cpu-cpuid.AVX512F", true},
		{"", false},
		{"/name", false},
		{"Upper.io/name", false},
		{"a..b/name", false},
		{"prefix/", false},
		{"prefix/-name", false},
		{"a/b/c", false},
		{"x/" + strings.Repeat("n", 64), false},
		{strings.Repeat("p", 254) + "/n", false},
	} {
		if err := ValidateLabelKey(tt.key); (err == nil) != tt.ok {
			t.Errorf("ValidateLabelKey(%q) = %v, want ok %v", tt.key, err, tt.ok)
		}
	}
}

func TestNodeNameFromUser(t *testing.T) {
	for _, tt := range []struct {
		user, want, err string
	}{
		{"system:node:ip-10-0-1-23.me-central-1.compute.internal", "ip-10-0-1-23.me-central-1.compute.internal", ""},
		{"system:node:gpu-0", "gpu-0", ""},
		{"system:node:", "", "empty node name"},
		{"system:node:Upper", "", "not a DNS subdomain"},
		{"system:node:a..b", "", "not a DNS subdomain"},
		{"system:serviceaccount:kube-system:hwprobe", "", "not a node's identity"},
		{"kubernetes-admin", "", "not a node's identity"},
		{"system:node:" + strings.Repeat("a", 254), "", "at most 253"},
	} {
		got, err := NodeNameFromUser(tt.user)
		if got != tt.want || (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("NodeNameFromUser(%q) = %q, %v; want %q, %q", tt.user, got, err, tt.want, tt.err)
		}
	}
}

func TestVerdict(t *testing.T) {
	pass := Verdict{Passed: true, Reason: ReasonChecksPassed}
	fail := Verdict{Reason: ReasonCheckFailed, Message: "gpu.count: found 7 GPUs"}
	if pass.Status() != StatusPassed || pass.ConditionStatus() != ConditionTrue {
		t.Errorf("pass: %s %s", pass.Status(), pass.ConditionStatus())
	}
	if fail.Status() != StatusFailed || fail.ConditionStatus() != ConditionFalse {
		t.Errorf("fail: %s %s", fail.Status(), fail.ConditionStatus())
	}
}

var expiry = time.Date(2026, 11, 28, 10, 30, 0, 0, time.UTC)

func TestFeatures(t *testing.T) {
	tests := []struct {
		name   string
		in     FeatureInput
		expiry time.Time
		want   string
	}{
		{
			name:   "H100 node that passed",
			in:     FeatureInput{Status: StatusPassed, GPUProduct: "NVIDIA H100 80GB HBM3", GPUCount: 8, GPUMemoryMiB: 81559},
			expiry: expiry,
			want: `# +expiry-time=2026-11-28T10:30:00Z
mlplatform.io/hwprobe.status=passed
nvidia.com/gpu.count=8
nvidia.com/gpu.memory=81559
nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3
`,
		},
		{
			name:   "CPU node that failed: no GPU labels",
			in:     FeatureInput{Status: StatusFailed},
			expiry: expiry,
			want:   "# +expiry-time=2026-11-28T10:30:00Z\nmlplatform.io/hwprobe.status=failed\n",
		},
		{
			name:   "expiry in another zone, to the second",
			in:     FeatureInput{Status: StatusPassed, GPUCount: 1, GPUProduct: "NVIDIA H200"},
			expiry: time.Date(2026, 11, 28, 14, 30, 0, 999, time.FixedZone("GST", 4*3600)),
			want:   "# +expiry-time=2026-11-28T10:30:00Z\nmlplatform.io/hwprobe.status=passed\nnvidia.com/gpu.count=1\nnvidia.com/gpu.product=NVIDIA-H200\n",
		},
		{
			name: "no expiry",
			in:   FeatureInput{Status: StatusPassed},
			want: "mlplatform.io/hwprobe.status=passed\n",
		},
		{
			name:   "a product name with characters labels refuse",
			in:     FeatureInput{Status: "Passed!", GPUCount: 2, GPUProduct: "  NVIDIA/Foo (β) " + strings.Repeat("X", 80)},
			expiry: expiry,
			want:   "# +expiry-time=2026-11-28T10:30:00Z\nmlplatform.io/hwprobe.status=Passed\nnvidia.com/gpu.count=2\nnvidia.com/gpu.product=NVIDIAFoo-" + strings.Repeat("X", 53) + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Features(tt.in, tt.expiry)
			body := string(b)
			if !strings.HasPrefix(body, "# Written by hwprobe") {
				t.Errorf("no header:\n%s", body)
			}
			var lines []string
			for _, l := range strings.SplitAfter(body, "\n") {
				if l != "" && !strings.HasPrefix(l, "# Written") && !strings.HasPrefix(l, "# Replaced") {
					lines = append(lines, l)
				}
			}
			if got := strings.Join(lines, ""); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			labels, exp, err := ParseFeatures(b)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(labels, Labels(tt.in)) || !exp.Equal(tt.expiry.Truncate(time.Second)) {
				t.Errorf("parsed back %v %s, want %v %s", labels, exp, Labels(tt.in), tt.expiry)
			}
			for k, v := range labels {
				if ValidateLabelKey(k) != nil || !ValidLabelValue(v) {
					t.Errorf("invalid label %s=%s", k, v)
				}
			}
		})
	}
}

func TestParseFeatures(t *testing.T) {
	early := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		file   string
		labels map[string]string
		expiry time.Time
		err    string
	}{
		{name: "empty", file: "", labels: map[string]string{}},
		{name: "a key alone is true", file: "vendor.io/feature\n", labels: map[string]string{"vendor.io/feature": "true"}},
		{name: "spaces and comments", file: "  # comment\n\n  a=b  \r\n#+not-a-directive\n", labels: map[string]string{"a": "b"}},
		{name: "later line wins", file: "a=1\na=2\n", labels: map[string]string{"a": "2"}},
		{name: "empty value", file: "a=\n", labels: map[string]string{"a": ""}},
		{name: "expiry applies to the lines after it", file: "a=1\n# +expiry-time=2027-01-01T00:00:00Z\nb=2\n# +expiry-time=2026-01-01T04:00:00+04:00\nc=3\n",
			labels: map[string]string{"a": "1", "b": "2", "c": "3"}, expiry: early},
		{name: "expiry without labels after it", file: "a=1\n# +expiry-time=2026-01-01T00:00:00Z\n", labels: map[string]string{"a": "1"}},
		{name: "no-label skips the next line only", file: "a=1\n# +no-label\na=2\nb=3\n", labels: map[string]string{"b": "3"}},
		{name: "no-feature keeps the label", file: "# +no-feature\na=1\n", labels: map[string]string{"a": "1"}},
		{name: "unknown directive", file: "# +colour=green\n", err: `line 1: unknown directive "colour"`},
		{name: "expiry without a value", file: "# +expiry-time\n", err: "want # +expiry-time=RFC3339"},
		{name: "expiry not RFC 3339", file: "# +expiry-time=tomorrow\n", err: "line 1: expiry-time"},
		{name: "bad key", file: "a=1\nbad key=1\n", err: `line 2: label key "bad key"`},
		{name: "bad value", file: "a=NVIDIA H100\n", err: `value "NVIDIA H100" is not a valid label value`},
		{name: "value too long", file: "a=" + strings.Repeat("x", 64) + "\n", err: "is not a valid label value"},
		{name: "too large", file: strings.Repeat("#\n", MaxFeaturesSize/2+1), err: "NFD reads at most 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labels, exp, err := ParseFeatures([]byte(tt.file))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(labels, tt.labels) || !exp.Equal(tt.expiry) {
				t.Errorf("got %v %s, want %v %s", labels, exp, tt.labels, tt.expiry)
			}
		})
	}
}
