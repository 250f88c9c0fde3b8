package kube

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxFeaturesSize is the largest feature file NFD's worker reads (bytes).
const MaxFeaturesSize = 65536

// NFD's feature file directives: a comment line "# +NAME[=VALUE]" applies
// to the lines after it.
const (
	directivePrefix = "# +"
	expiryDirective = "expiry-time"
	noLabel         = "no-label"
	noFeature       = "no-feature"
)

// FeatureInput is what a node's feature file says.
type FeatureInput struct {
	Status       string // StatusPassed or StatusFailed; "" writes no status label
	GPUProduct   string // NVML's product name as it is ("NVIDIA H100 80GB HBM3")
	GPUCount     int    // GPUs found; 0 writes no GPU label (as GFD)
	GPUMemoryMiB uint64 // per GPU; 0 writes no memory label
}

// Labels returns the labels of in, every value a valid label value: the
// status; for a node with GPUs, GFD's nvidia.com/gpu.count, .memory (when
// known) and .product (NVML's name made a label value by LabelValue).
func Labels(in FeatureInput) map[string]string {
	l := map[string]string{}
	if v := LabelValue(in.Status); v != "" {
		l[LabelStatus] = v
	}
	if in.GPUCount <= 0 {
		return l
	}
	l[LabelGPUCount] = strconv.Itoa(in.GPUCount)
	if in.GPUMemoryMiB > 0 {
		l[LabelGPUMemory] = strconv.FormatUint(in.GPUMemoryMiB, 10)
	}
	if v := LabelValue(in.GPUProduct); v != "" {
		l[LabelGPUProduct] = v
	}
	return l
}

// Features renders the NFD local feature file of in: a header comment,
// the expiry directive (expiry in UTC, to the second; none when expiry is
// zero; the year must be 1 to 9999), then "key=value" lines in key order.
// NFD's worker drops the labels once the expiry has passed, so a node
// whose hwprobe stopped does not keep advertising an old verdict.
func Features(in FeatureInput, expiry time.Time) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by hwprobe (mlplatform): the node's validation verdict and its GPUs.\n")
	b.WriteString("# Replaced whole by every run of hwprobe kube publish or check; do not edit.\n")
	if !expiry.IsZero() {
		fmt.Fprintf(&b, "%s%s=%s\n", directivePrefix, expiryDirective, expiry.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	labels := Labels(in)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(&b, "%s=%s\n", k, labels[k])
	}
	return b.Bytes()
}

// ParseFeatures reads an NFD local feature file as NFD's worker does: lines
// trimmed, blank lines and comments skipped, "# +expiry-time=RFC3339",
// "# +no-label" and "# +no-feature" directives applied to the lines after
// them, "key=value" (a key alone is "true"), a later line overriding an
// earlier one. Keys come back as written (NFD prefixes a key without one
// with feature.node.kubernetes.io/). The time is the earliest expiry in
// force for a label line, zero when none had one. It refuses what NFD
// would skip or Kubernetes refuse: a file over MaxFeaturesSize, an unknown
// or malformed directive, an invalid label key or value.
func ParseFeatures(b []byte) (map[string]string, time.Time, error) {
	if len(b) > MaxFeaturesSize {
		return nil, time.Time{}, fmt.Errorf("feature file of %d bytes: NFD reads at most %d", len(b), MaxFeaturesSize)
	}
	labels := map[string]string{}
	var expiry, earliest time.Time
	skipLabel := false
	for i, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, directivePrefix):
			name, value, hasValue := strings.Cut(line[len(directivePrefix):], "=")
			switch name {
			case expiryDirective:
				if !hasValue {
					return nil, time.Time{}, fmt.Errorf("line %d: %q: want # +%s=RFC3339", i+1, line, expiryDirective)
				}
				t, err := time.Parse(time.RFC3339, strings.TrimSpace(value))
				if err != nil {
					return nil, time.Time{}, fmt.Errorf("line %d: %s: %w", i+1, expiryDirective, err)
				}
				expiry = t
			case noLabel:
				skipLabel = true
			case noFeature:
				// features only: labels are unaffected
			default:
				return nil, time.Time{}, fmt.Errorf("line %d: unknown directive %q", i+1, name)
			}
			continue
		case strings.HasPrefix(line, "#"):
			continue
		}
		key, value, hasValue := strings.Cut(line, "=")
		if !hasValue {
			value = "true"
		}
		if err := ValidateLabelKey(key); err != nil {
			return nil, time.Time{}, fmt.Errorf("line %d: %w", i+1, err)
		}
		if !ValidLabelValue(value) {
			return nil, time.Time{}, fmt.Errorf("line %d: label %s: value %q is not a valid label value (at most 63 characters, [A-Za-z0-9] at both ends, [-A-Za-z0-9_.] between)", i+1, key, value)
		}
		if skipLabel {
			delete(labels, key)
			skipLabel = false
			continue
		}
		labels[key] = value
		if !expiry.IsZero() && (earliest.IsZero() || expiry.Before(earliest)) {
			earliest = expiry
		}
	}
	return labels, earliest, nil
}
