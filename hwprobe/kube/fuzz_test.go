package kube

import (
	"maps"
	"testing"
	"time"
)

// FuzzParseFeatures: ParseFeatures never panics, and whatever it accepts
// is a valid label set; every file Features writes parses back to the
// labels and the expiry it was given.
func FuzzParseFeatures(f *testing.F) {
	f.Add([]byte("# +expiry-time=2026-11-28T10:30:00Z\nmlplatform.io/hwprobe.status=passed\nnvidia.com/gpu.count=8\n"), StatusPassed, "NVIDIA H100 80GB HBM3", 8, uint64(81559), int64(1795861800))
	f.Add([]byte("a\n# +no-label\nb=1\n# +no-feature\nc=2\n"), StatusFailed, "", 0, uint64(0), int64(0))
	f.Add([]byte("# +expiry-time\n"), "Passed!", " NVIDIA/Foo (β) ", -1, uint64(1), int64(-1))
	f.Fuzz(func(t *testing.T, file []byte, status, product string, count int, mem uint64, unix int64) {
		if labels, _, err := ParseFeatures(file); err == nil {
			for k, v := range labels {
				if ValidateLabelKey(k) != nil || !ValidLabelValue(v) {
					t.Fatalf("accepted invalid label %q=%q from %q", k, v, file)
				}
			}
		}

		in := FeatureInput{Status: status, GPUProduct: product, GPUCount: count, GPUMemoryMiB: mem}
		var exp time.Time
		if unix > 0 {
			// years 1970 to 9999: RFC 3339 holds four-digit years
			exp = time.Unix(unix%253402300799, 0)
		}
		b := Features(in, exp)
		labels, got, err := ParseFeatures(b)
		if err != nil {
			t.Fatalf("Features(%+v) does not parse back: %v\n%s", in, err, b)
		}
		if !maps.Equal(labels, Labels(in)) {
			t.Fatalf("labels %v, want %v", labels, Labels(in))
		}
		if len(labels) > 0 && !got.Equal(exp) {
			t.Fatalf("expiry %s, want %s", got, exp)
		}
	})
}
