package profile

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Render writes p as HCL text that Load reads back to an equal Profile.
// Unset optional values are left out.
func Render(p *Profile) []byte {
	w := &writer{}
	v := p.Version
	if v == 0 {
		v = Version
	}
	w.attr("version", strconv.Itoa(v))
	w.str("name", p.Name)
	w.list("optional_checks", p.OptionalChecks)

	if h := p.Host; h != nil {
		w.open("host")
		w.str("region", h.Region)
		w.list("zone_ids", h.ZoneIDs)
		w.str("instance_type", h.InstanceType)
		w.boolPtr("require_verified_identity", h.RequireVerifiedIdentity)
		w.close()
	}
	if c := p.CPU; c != nil {
		w.open("cpu")
		w.str("vendor", c.Vendor)
		w.int("min_cores", c.MinCores)
		w.int("min_threads", c.MinThreads)
		w.float("min_memory_gib", c.MinMemoryGiB)
		w.list("features", c.Features)
		w.close()
	}
	if g := p.GPU; g != nil {
		w.open("gpu")
		w.str("model", g.Model)
		w.attr("count", strconv.Itoa(g.Count))
		w.float("min_memory_gib", g.MinMemoryGiB)
		w.int("min_nvlink_links", g.MinNVLinkLinks)
		w.boolPtr("mig_enabled", g.MIGEnabled)
		w.boolPtr("ecc_enabled", g.ECCEnabled)
		if g.MaxUncorrectedErrors != nil {
			w.attr("max_uncorrected_errors", strconv.Itoa(*g.MaxUncorrectedErrors))
		}
		w.int("min_pcie_gen", g.MinPCIeGen)
		w.int("min_pcie_width", g.MinPCIeWidth)
		w.int("max_temperature_c", g.MaxTemperatureC)
		w.int("xid_seconds", g.XIDSeconds)
		w.close()
	}
	if e := p.EFA; e != nil {
		w.open("efa")
		w.int("count", e.Count)
		w.int("min_active_ports", e.MinActivePort)
		w.int("infiniband_count", e.InfiniBand)
		w.close()
	}
	for _, bm := range p.Benchmarks {
		w.open("benchmark " + quote(bm.Name))
		w.floatPtr("min", bm.Min)
		w.floatPtr("min_efficiency", bm.MinEfficiency)
		w.floatPtr("max", bm.Max)
		w.str("backend", bm.Backend)
		if bm.Optional {
			w.attr("optional", "true")
		}
		w.close()
	}
	if r := p.Report; r != nil {
		w.open("report")
		w.attr("s3_uri", quote(r.S3URI))
		w.str("kms_key_id", r.KMSKeyID)
		w.close()
	}
	return []byte(w.b.String())
}

type writer struct {
	b      strings.Builder
	indent string
}

func (w *writer) open(header string) {
	fmt.Fprintf(&w.b, "\n%s {\n", header)
	w.indent = "  "
}

func (w *writer) close() {
	w.b.WriteString("}\n")
	w.indent = ""
}

func (w *writer) attr(name, expr string) { fmt.Fprintf(&w.b, "%s%s = %s\n", w.indent, name, expr) }

func (w *writer) str(name, v string) {
	if v != "" {
		w.attr(name, quote(v))
	}
}

func (w *writer) int(name string, v int) {
	if v != 0 {
		w.attr(name, strconv.Itoa(v))
	}
}

func (w *writer) float(name string, v float64) {
	if v != 0 {
		w.attr(name, strconv.FormatFloat(v, 'g', -1, 64))
	}
}

func (w *writer) floatPtr(name string, v *float64) {
	if v != nil {
		w.attr(name, strconv.FormatFloat(*v, 'g', -1, 64))
	}
}

func (w *writer) boolPtr(name string, v *bool) {
	if v != nil {
		w.attr(name, strconv.FormatBool(*v))
	}
}

func (w *writer) list(name string, vs []string) {
	if len(vs) == 0 {
		return
	}
	q := make([]string, len(vs))
	for i, s := range vs {
		q[i] = quote(s)
	}
	w.attr(name, "["+strings.Join(q, ", ")+"]")
}

// quote writes s as an HCL quoted string: escapes, and template sequences
// "${" and "%{" doubled so they stay literal.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case (r == '$' || r == '%') && strings.HasPrefix(s[i+1:], "{"):
			b.WriteRune(r)
			b.WriteRune(r)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
