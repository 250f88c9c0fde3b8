package review

import (
	"encoding/json"
	"math"
	"strconv"
)

// lookup walks an object by attribute names. A nested block (a list of one
// object in Terraform's JSON) is entered transparently.
func lookup(v any, path ...string) any {
	for _, k := range path {
		v = single(v)
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// single unwraps a list of exactly one element (a nested block).
func single(v any) any {
	if l, ok := v.([]any); ok && len(l) == 1 {
		return l[0]
	}
	return v
}

// unknownAt reports whether Terraform's after_unknown marks path (or a
// parent of it) as known only after apply.
func unknownAt(u any, path ...string) bool {
	for _, k := range path {
		if b, ok := u.(bool); ok {
			return b
		}
		u = single(u)
		m, ok := u.(map[string]any)
		if !ok {
			return false
		}
		u = m[k]
	}
	switch t := u.(type) {
	case bool:
		return t
	}
	return false
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// num reads a JSON number (float64 or json.Number) or a numeric string.
func num(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, !math.IsNaN(t) && !math.IsInf(t, 0)
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(t, 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}
