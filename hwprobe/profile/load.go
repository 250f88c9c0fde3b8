package profile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// Load parses and checks a profile. filename is used only in diagnostics.
// On error the diagnostics carry the file, line and column of each problem;
// render them with FormatDiagnostics.
func Load(filename string, src []byte) (*Profile, hcl.Diagnostics) {
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	var p Profile
	diags = append(diags, gohcl.DecodeBody(file.Body, nil, &p)...)
	if diags.HasErrors() {
		return nil, diags
	}
	body, _ := file.Body.(*hclsyntax.Body)
	diags = append(diags, check(&p, body)...)
	if diags.HasErrors() {
		return nil, diags
	}
	if p.Version == 0 {
		p.Version = Version
	}
	return &p, diags
}

// FormatDiagnostics renders diagnostics as "file:line:column: severity:
// summary: detail" lines, each followed by the offending source line with
// the range underlined. src is the profile text Load was given.
func FormatDiagnostics(filename string, src []byte, diags hcl.Diagnostics) string {
	lines := strings.Split(string(src), "\n")
	var b strings.Builder
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject == nil {
			fmt.Fprintf(&b, "%s: %s: %s\n", filename, sev, msg)
			continue
		}
		r := *d.Subject
		fmt.Fprintf(&b, "%s:%d:%d: %s: %s\n", r.Filename, r.Start.Line, r.Start.Column, sev, msg)
		if r.Start.Line < 1 || r.Start.Line > len(lines) {
			continue
		}
		line := strings.TrimRight(lines[r.Start.Line-1], "\r")
		fmt.Fprintf(&b, "%5d | %s\n", r.Start.Line, line)
		width := 1
		if r.End.Line == r.Start.Line && r.End.Column > r.Start.Column {
			width = r.End.Column - r.Start.Column
		}
		pad := strings.Map(func(c rune) rune {
			if c == '\t' {
				return '\t'
			}
			return ' '
		}, prefixRunes(line, r.Start.Column-1))
		fmt.Fprintf(&b, "      | %s%s\n", pad, strings.Repeat("^", width))
	}
	return b.String()
}

func prefixRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// locator finds source ranges for semantic diagnostics.
type locator struct{ body *hclsyntax.Body }

func (l locator) block(typ string, labels ...string) *hclsyntax.Block {
	if all := l.blocks(typ, labels...); len(all) > 0 {
		return all[0]
	}
	return nil
}

func (l locator) blocks(typ string, labels ...string) []*hclsyntax.Block {
	if l.body == nil {
		return nil
	}
	var out []*hclsyntax.Block
	for _, b := range l.body.Blocks {
		if b.Type != typ || len(b.Labels) != len(labels) {
			continue
		}
		match := true
		for i := range labels {
			match = match && b.Labels[i] == labels[i]
		}
		if match {
			out = append(out, b)
		}
	}
	return out
}

// rng is the range of attribute attr inside block typ (attr "" for the
// block itself; typ "" for the top level).
func (l locator) rng(typ, attr string, labels ...string) *hcl.Range {
	if l.body == nil {
		return nil
	}
	body := l.body
	if typ != "" {
		b := l.block(typ, labels...)
		if b == nil {
			return nil
		}
		if attr == "" {
			r := b.DefRange()
			return &r
		}
		body = b.Body
	}
	if a, ok := body.Attributes[attr]; ok {
		r := a.Expr.Range()
		return &r
	}
	return nil
}

func check(p *Profile, body *hclsyntax.Body) hcl.Diagnostics {
	loc := locator{body: body}
	var diags hcl.Diagnostics
	bad := func(r *hcl.Range, summary, detail string) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: r})
	}
	if p.Version != 0 && p.Version != Version {
		bad(loc.rng("", "version"), "Unsupported profile version", fmt.Sprintf("This hwprobe reads profile version %d, not %d.", Version, p.Version))
	}
	if h := p.Host; h != nil {
		for _, z := range h.ZoneIDs {
			if _, err := residency.ParseZoneID(z); err != nil {
				bad(loc.rng("host", "zone_ids"), "Invalid zone id", fmt.Sprintf("%q is not a zone id such as \"mec1-az1\" (zone ids, not zone names, are stable across accounts): %v.", z, err))
			}
		}
	}
	nonNegative := func(typ, attr string, v int) {
		if v < 0 {
			bad(loc.rng(typ, attr), "Invalid value", fmt.Sprintf("%s.%s must not be negative.", typ, attr))
		}
	}
	if c := p.CPU; c != nil {
		nonNegative("cpu", "min_cores", c.MinCores)
		nonNegative("cpu", "min_threads", c.MinThreads)
		if c.MinMemoryGiB < 0 {
			bad(loc.rng("cpu", "min_memory_gib"), "Invalid value", "cpu.min_memory_gib must not be negative.")
		}
		for _, f := range c.Features {
			if f == "" || f != strings.ToLower(f) || strings.ContainsAny(f, " \t") {
				bad(loc.rng("cpu", "features"), "Invalid CPU feature", fmt.Sprintf("%q is not a feature name: use lowercase /proc/cpuinfo names such as \"avx512f\" or \"amx_tile\".", f))
			}
		}
	}
	if g := p.GPU; g != nil {
		nonNegative("gpu", "count", g.Count)
		nonNegative("gpu", "min_nvlink_links", g.MinNVLinkLinks)
		nonNegative("gpu", "min_pcie_gen", g.MinPCIeGen)
		nonNegative("gpu", "min_pcie_width", g.MinPCIeWidth)
		nonNegative("gpu", "xid_seconds", g.XIDSeconds)
		nonNegative("gpu", "max_temperature_c", g.MaxTemperatureC)
		if g.MaxUncorrectedErrors != nil {
			nonNegative("gpu", "max_uncorrected_errors", *g.MaxUncorrectedErrors)
		}
		if g.MinMemoryGiB < 0 {
			bad(loc.rng("gpu", "min_memory_gib"), "Invalid value", "gpu.min_memory_gib must not be negative.")
		}
		if g.XIDSeconds > 600 {
			bad(loc.rng("gpu", "xid_seconds"), "Invalid value", "gpu.xid_seconds is at most 600.")
		}
	}
	if e := p.EFA; e != nil {
		nonNegative("efa", "count", e.Count)
		nonNegative("efa", "min_active_ports", e.MinActivePort)
		nonNegative("efa", "infiniband_count", e.InfiniBand)
	}
	seen := map[string]bool{}
	for _, b := range p.Benchmarks {
		r := loc.rng("benchmark", "", b.Name)
		if b.Name == "" {
			bad(r, "Invalid benchmark name", "A benchmark block needs a name label, for example benchmark \"cpu_sgemm\" { ... }.")
		} else if !slices.Contains(BenchmarkNames(), b.Name) {
			bad(r, "Unknown benchmark", fmt.Sprintf("hwprobe has no benchmark %q. Benchmarks: %s.", b.Name, strings.Join(BenchmarkNames(), ", ")))
		}
		if seen[b.Name] {
			if all := loc.blocks("benchmark", b.Name); len(all) > 1 {
				dr := all[len(all)-1].DefRange()
				r = &dr
			}
			bad(r, "Duplicate benchmark", fmt.Sprintf("Benchmark %q is declared more than once.", b.Name))
		}
		seen[b.Name] = true
		if b.MinEfficiency != nil && (*b.MinEfficiency <= 0 || *b.MinEfficiency > 1) {
			bad(loc.rng("benchmark", "min_efficiency", b.Name), "Invalid efficiency", "min_efficiency is a fraction of the peak, above 0 and at most 1.")
		}
		if b.Min != nil && b.Max != nil && *b.Min > *b.Max {
			bad(r, "Invalid thresholds", fmt.Sprintf("Benchmark %q has min above max.", b.Name))
		}
	}
	if rp := p.Report; rp != nil {
		if _, _, err := SplitS3URI(rp.S3URI); err != nil {
			bad(loc.rng("report", "s3_uri"), "Invalid S3 URI", err.Error())
		}
	}
	return diags
}

// SplitS3URI splits "s3://bucket/prefix" into bucket and key prefix, with
// the residency package's parser (S3 bucket naming rules included).
func SplitS3URI(uri string) (bucket, key string, err error) {
	if !strings.HasPrefix(uri, "s3://") {
		return "", "", fmt.Errorf("%q is not an s3:// URI", uri)
	}
	loc, err := residency.ParseS3URI(uri)
	if err != nil {
		return "", "", err
	}
	return loc.Bucket, loc.Key, nil
}
