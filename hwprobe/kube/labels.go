package kube

import (
	"fmt"
	"strings"
)

// MaxLabelValue is the longest label value Kubernetes accepts.
const MaxLabelValue = 63

// LabelValue makes s a valid Kubernetes label value, the way GPU Feature
// Discovery makes an NVML product name one: characters other than ASCII
// letters, digits, '-', '_', '.' and spaces are dropped, runs of spaces
// become one '-' ("NVIDIA H100 80GB HBM3" is "NVIDIA-H100-80GB-HBM3");
// then the value is cut to 63 characters and anything but a letter or a
// digit is trimmed from both ends. The result may be empty (a valid value).
func LabelValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80 && (alnum(byte(r)) || r == '-' || r == '_' || r == '.'):
			b.WriteRune(r)
		case r == ' ' || r == '\t':
			b.WriteByte(' ')
		}
	}
	v := strings.Join(strings.Fields(b.String()), "-")
	v = trimNonAlnum(v)
	if len(v) > MaxLabelValue {
		v = trimNonAlnum(v[:MaxLabelValue])
	}
	return v
}

func trimNonAlnum(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r >= 0x80 || !alnum(byte(r)) })
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidLabelValue says whether Kubernetes accepts s as a label value: at
// most 63 characters, empty or [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?.
func ValidLabelValue(s string) bool {
	if s == "" {
		return true
	}
	return len(s) <= MaxLabelValue && labelName(s)
}

// labelName: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, any length.
func labelName(s string) bool {
	if s == "" || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// ValidateLabelKey says why Kubernetes would refuse key as a label key, or
// nil: an optional prefix (a DNS subdomain of at most 253 characters) and
// '/', then a name of at most 63 characters, [A-Za-z0-9] at both ends and
// [-A-Za-z0-9_.] between.
func ValidateLabelKey(key string) error {
	prefix, name, ok := strings.Cut(key, "/")
	if !ok {
		prefix, name = "", key
	} else if err := validPrefix(prefix); err != nil {
		return fmt.Errorf("label key %q: %w", key, err)
	}
	if len(name) > MaxLabelValue || !labelName(name) {
		return fmt.Errorf("label key %q: the name must be 1 to 63 characters, [A-Za-z0-9] at both ends and [-A-Za-z0-9_.] between", key)
	}
	return nil
}

func validPrefix(p string) error {
	if p == "" || len(p) > 253 {
		return fmt.Errorf("prefix of %d characters: want 1 to 253", len(p))
	}
	for _, part := range strings.Split(p, ".") {
		if !dnsLabel(part) {
			return fmt.Errorf("prefix %q is not a DNS subdomain", p)
		}
	}
	return nil
}
