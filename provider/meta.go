package provider

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// Meta is what Configure hands to every resource and data source: the
// environment of one provider configuration.
type Meta = platform.Env

// ReportViolations adds one diagnostic per violation, on its attribute path.
func ReportViolations(mode residency.Mode, vs []residency.Violation, diags *diag.Diagnostics) {
	for _, v := range vs {
		summary := "Residency violation: " + v.Rule
		detail := fmt.Sprintf("%s = %q: %s.\n\nRule: %s (%s mode).\nFix: %s", v.Path, v.Value, v.Msg, v.Rule, mode, v.Fix)
		p := parsePath(v.Path)
		if mode == residency.ModeAudit {
			diags.AddAttributeWarning(p, summary, detail)
		} else {
			diags.AddAttributeError(p, summary, detail)
		}
	}
}

// addConfigError reports a core configuration error on its attribute.
func addConfigError(diags *diag.Diagnostics, err error) {
	var ce *residency.ConfigError
	if errors.As(err, &ce) {
		diags.AddAttributeError(parsePath(ce.Path), "Invalid provider configuration", ce.Error())
		return
	}
	diags.AddError("configuring the mlplatform provider", err.Error())
}

// parsePath turns "a.b[2].c" into a framework path. Map keys are written
// a["key"].
func parsePath(s string) path.Path {
	var p path.Path
	first := true
	step := func(name string) {
		if name == "" {
			return
		}
		if first {
			p = path.Root(name)
			first = false
			return
		}
		p = p.AtName(name)
	}
	for s != "" {
		i := strings.IndexAny(s, ".[")
		if i < 0 {
			step(s)
			break
		}
		step(s[:i])
		if s[i] == '.' {
			s = s[i+1:]
			continue
		}
		j := strings.IndexByte(s[i:], ']')
		if j < 0 {
			step(s[i:])
			break
		}
		idx := s[i+1 : i+j]
		s = strings.TrimPrefix(s[i+j+1:], ".")
		if first {
			continue
		}
		if n, err := strconv.Atoi(idx); err == nil {
			p = p.AtListIndex(n)
		} else {
			p = p.AtMapKey(strings.Trim(idx, `"`))
		}
	}
	return p
}
