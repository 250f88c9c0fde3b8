package review

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CommentLimit is GitHub's limit on a pull-request comment body
// (65,536 characters). The review counts bytes, which are never fewer than
// characters, so a comment within it always posts.
const CommentLimit = 65536

// Marker starts every comment, so CI can find and update its own comment.
const Marker = "<!-- mlplatform-review -->"

// Markdown renders the report for a pull-request comment: a short summary
// table first, the details folded in <details>. The result is at most limit
// bytes (CommentLimit when limit <= 0); when the full text is longer, table
// rows are left out, and the comment says so and how many.
func Markdown(r *Report, limit int) string {
	if limit <= 0 {
		limit = CommentLimit
	}
	full := renderMarkdown(r, math.MaxInt, 0)
	if len(full) <= limit {
		return full
	}
	total := len(full)
	for rows := maxRows(r); rows >= 0; rows = rows * 2 / 3 {
		out := renderMarkdown(r, rows, total)
		if len(out) <= limit {
			return out
		}
		if rows == 0 {
			break
		}
	}
	// Even the summary alone is over the limit: cut it, and say so.
	note := fmt.Sprintf("\n\n> **Truncated**: the review is %d characters, over GitHub's %d-character comment limit. Run `mlplatform review --format json` for all of it.\n", total, CommentLimit)
	out := renderMarkdown(r, 0, total)
	const closing = "\n</details>\n"
	cut := limit - len(note) - strings.Count(out, "<details>")*len(closing)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	if i := strings.LastIndexByte(out[:cut], '\n'); i > 0 {
		cut = i
	}
	kept := out[:cut]
	// Close what the cut left open, so the rest of the page renders.
	for n := strings.Count(kept, "<details>") - strings.Count(kept, "</details>"); n > 0; n-- {
		kept += closing
	}
	return kept + note
}

func maxRows(r *Report) int {
	n := len(r.Cost.Resources)
	for _, k := range []int{len(r.Residency.Locations), len(r.Destructive), len(r.Cost.Unknown) + len(r.Cost.NotPriced), len(r.Validation.Gates)} {
		if k > n {
			n = k
		}
	}
	return n
}

// renderMarkdown renders with at most rows rows per details table; total is
// the full length, for the truncation notice (0 when nothing is cut).
func renderMarkdown(r *Report, rows, total int) string {
	var b strings.Builder
	omitted := 0
	b.WriteString(Marker + "\n")
	b.WriteString("### mlplatform review\n\n")
	s := r.Summary
	fmt.Fprintf(&b, "**Plan** (%s%s): %d to create, %d to update, %d to replace, %d to destroy.\n\n", r.Source, versionSuffix(r.ToolVersion), s.Create, s.Update, s.Replace, s.Delete)
	if total > 0 {
		fmt.Fprintf(&b, "> **Truncated**: the full review is %d characters, over GitHub's %d-character comment limit; long tables below are cut and say how many rows they leave out. Run `mlplatform review --format json` for all of it.\n\n", total, CommentLimit)
	}
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| **Monthly cost** | %s |\n", costSummary(r))
	fmt.Fprintf(&b, "| **GPUs** | %s |\n", gpuSummary(r))
	fmt.Fprintf(&b, "| **Residency**%s | %s |\n", jurisdictionLabel(r), residencySummary(r))
	fmt.Fprintf(&b, "| **Destructive** | %s |\n", destroySummary(r))
	fmt.Fprintf(&b, "| **Validation gate** | %s |\n", validationSummary(r))
	if r.Policy != nil {
		fmt.Fprintf(&b, "| **Policy** (`--fail-on %s`) | %s |\n", strings.Join(r.Policy.Rules, ","), policySummary(r.Policy))
	}
	b.WriteString("\n")

	// Destructive changes: stateful first (already sorted).
	if len(r.Destructive) > 0 {
		open(&b, fmt.Sprintf("Destructive changes (%d)", len(r.Destructive)))
		b.WriteString("| | Resource | Action | Holds | Replace paths | Reason |\n|---|---|---|---|---|---|\n")
		for i, d := range r.Destructive {
			if i >= rows {
				omitted += more(&b, len(r.Destructive)-i)
				break
			}
			mark := ""
			if d.Stateful {
				mark = ":warning: stateful"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mark, cellCode(d.Address), d.Action, cell(d.Holds), codeList(d.ReplacePaths), cell(d.ActionReason))
		}
		closeDetails(&b)
	}

	// Residency.
	if r.Residency.Evaluated && len(r.Residency.Locations) > 0 {
		open(&b, fmt.Sprintf("Residency: %d location(s) checked against jurisdiction %s", len(r.Residency.Locations), r.Residency.Jurisdiction))
		fmt.Fprintf(&b, "Allowed regions: %s. Mode: %s. Jurisdiction from %s.\n\n", codes(r.Residency.AllowedRegions), r.Residency.Mode, line(r.Residency.JurisdictionSource))
		b.WriteString("| Verdict | Resource | Attribute | Value | Rule | Why | Fix |\n|---|---|---|---|---|---|---|\n")
		for i, l := range r.Residency.Locations {
			if i >= rows {
				omitted += more(&b, len(r.Residency.Locations)-i)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", verdictLabel(l.Verdict), cellCode(l.Address), cellCode(l.Path), cellCode(l.Value), cell(l.Rule), cell(l.Reason), cell(l.Fix))
		}
		closeDetails(&b)
	}

	// Cost.
	if len(r.Cost.Resources) > 0 || len(r.Cost.Unknown) > 0 || len(r.Cost.NotPriced) > 0 {
		open(&b, fmt.Sprintf("Cost per resource (%d priced, %d unknown, %d not priced)", len(r.Cost.Resources), len(r.Cost.Unknown), len(r.Cost.NotPriced)))
		if len(r.Cost.Resources) > 0 {
			b.WriteString("| Resource | Action | Before /month | After /month | Change | Basis |\n|---|---|--:|--:|--:|---|\n")
			for i, l := range r.Cost.Resources {
				if i >= rows {
					omitted += more(&b, len(r.Cost.Resources)-i)
					break
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cellCode(l.Address), l.Action, money(l.Before), money(l.After), signedMoney(l.Delta), cell(l.Basis))
			}
			b.WriteString("\n")
		}
		if len(r.Cost.Unknown) > 0 {
			b.WriteString("**Unknown prices** (not counted in the totals, never as zero):\n\n")
			for i, u := range r.Cost.Unknown {
				if i >= rows {
					omitted += moreList(&b, len(r.Cost.Unknown)-i)
					break
				}
				fmt.Fprintf(&b, "- %s (%s): %s\n", code(u.Address), u.Side, line(u.Reason))
			}
			b.WriteString("\n")
		}
		if len(r.Cost.NotPriced) > 0 {
			b.WriteString("**Not priced**:\n\n")
			for i, u := range r.Cost.NotPriced {
				if i >= rows {
					omitted += moreList(&b, len(r.Cost.NotPriced)-i)
					break
				}
				fmt.Fprintf(&b, "- %s: %s\n", code(u.Address), line(u.Reason))
			}
			b.WriteString("\n")
		}
		if len(r.Cost.Prices) > 0 {
			b.WriteString("**Prices used** (catalog as of " + line(r.Cost.CatalogAsOf) + "):\n\n")
			for _, q := range r.Cost.Prices {
				est := ""
				if q.Estimate {
					est = ", estimate"
				}
				fmt.Fprintf(&b, "- %s: $%.4f/h (%s%s, as of %s). Source: %s\n", code(q.InstanceType), q.USDPerHour, line(q.Region), est, line(q.AsOf), line(q.Source))
			}
			b.WriteString("\n")
		}
		closeDetails(&b)
	}

	// GPUs.
	if len(r.GPUs.Models) > 0 {
		open(&b, "GPUs by model")
		b.WriteString("| Model | Before | After | Change | GPU-hours /month before | after | change | Resources |\n|---|--:|--:|--:|--:|--:|--:|---|\n")
		for _, g := range r.GPUs.Models {
			fmt.Fprintf(&b, "| %s | %d | %d | %+d | %s | %s | %s | %s |\n", cell(g.Model), g.Before, g.After, g.Delta, thousands(g.HoursBefore), thousands(g.HoursAfter), signed(g.HoursDelta), codeList(g.ContributingTo))
		}
		closeDetails(&b)
	}

	// Validation.
	if r.Validation.Declared {
		open(&b, "Validation gate (hwprobe)")
		b.WriteString("| Resource | Nodes | Profile | Level | On failure | Timeout |\n|---|--:|---|---|---|---|\n")
		for _, g := range r.Validation.Gates {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cellCode(g.Address), nodes(g.Nodes), cell(g.Profile), cellCode(g.Level), cellCode(g.OnFailure), cellCode(g.Timeout))
		}
		closeDetails(&b)
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "_%d row(s) left out to stay under the comment limit._\n", omitted)
	}
	b.WriteString("<sub>Offline review: prices from the mlplatform catalog, locations from the plan. Nothing left this machine.</sub>\n")
	return b.String()
}

func versionSuffix(v string) string {
	if v == "" {
		return ""
	}
	return " " + code(v)
}

func open(b *strings.Builder, summary string) {
	fmt.Fprintf(b, "<details><summary>%s</summary>\n\n", escapeHTML(summary))
}

func closeDetails(b *strings.Builder) { b.WriteString("\n</details>\n\n") }

func more(b *strings.Builder, n int) int {
	fmt.Fprintf(b, "| … | _%d more row(s) left out_ | | | | |\n", n)
	return n
}

func moreList(b *strings.Builder, n int) int {
	fmt.Fprintf(b, "- _%d more left out_\n", n)
	return n
}

func costSummary(r *Report) string {
	c := r.Cost
	s := fmt.Sprintf("%s → %s (**%s**)", usd(c.BeforeMonthly), usd(c.AfterMonthly), signedUSD(c.DeltaMonthly))
	if n := len(c.Unknown); n > 0 {
		s += fmt.Sprintf("; :grey_question: %d price(s) unknown, not counted", n)
	}
	return s
}

func gpuSummary(r *Report) string {
	var parts []string
	hours := 0.0
	for _, g := range r.GPUs.Models {
		hours += g.HoursDelta
		if g.Delta != 0 {
			parts = append(parts, fmt.Sprintf("%+d %s", g.Delta, cell(g.Model)))
		}
	}
	if len(parts) == 0 {
		if len(r.GPUs.Models) == 0 {
			return "no GPUs in the plan"
		}
		var now []string
		for _, g := range r.GPUs.Models {
			now = append(now, fmt.Sprintf("%d %s", g.After, cell(g.Model)))
		}
		return "no change: " + strings.Join(now, ", ")
	}
	return fmt.Sprintf("%s (%s GPU-hours/month)", strings.Join(parts, ", "), signed(hours))
}

func jurisdictionLabel(r *Report) string {
	if !r.Residency.Evaluated {
		return ""
	}
	return fmt.Sprintf(" (%s, %s)", r.Residency.Jurisdiction, r.Residency.Mode)
}

func residencySummary(r *Report) string {
	if !r.Residency.Evaluated {
		return ":grey_question: not evaluated: " + cell(r.Residency.NotEvaluatedReason)
	}
	c := r.Residency.Counts
	icon := ":white_check_mark:"
	switch {
	case c[VerdictOutside]+c[VerdictViolation] > 0:
		icon = ":x:"
	case c[VerdictUnknown] > 0:
		icon = ":grey_question:"
	}
	return fmt.Sprintf("%s %d outside · %d other violation(s) · %d unknown (until apply, or not in the plan) · %d in jurisdiction", icon, c[VerdictOutside], c[VerdictViolation], c[VerdictUnknown], c[VerdictIn])
}

func destroySummary(r *Report) string {
	if len(r.Destructive) == 0 {
		return "none"
	}
	var stateful []string
	for _, d := range r.Destructive {
		if d.Stateful {
			stateful = append(stateful, cellCode(d.Address)+" ("+string(d.Action)+")")
		}
	}
	if len(stateful) == 0 {
		return fmt.Sprintf("%d delete or replace, none stateful", len(r.Destructive))
	}
	if len(stateful) > 5 {
		stateful = append(stateful[:5], fmt.Sprintf("and %d more", len(stateful)-5))
	}
	return fmt.Sprintf(":warning: stateful: %s; %d delete or replace in all", strings.Join(stateful, ", "), len(r.Destructive))
}

func validationSummary(r *Report) string {
	if !r.Validation.Declared {
		return "none declared"
	}
	total, unknown := 0, 0
	for _, g := range r.Validation.Gates {
		if g.Nodes == nil {
			unknown++
			continue
		}
		total += *g.Nodes
	}
	s := fmt.Sprintf("%d node(s) in %d resource(s) gated by hwprobe", total, len(r.Validation.Gates))
	if unknown > 0 {
		s += fmt.Sprintf(", %d resource(s) with a node count known only after apply", unknown)
	}
	return s
}

func policySummary(v *Verdict) string {
	if v.Passed {
		return ":white_check_mark: passed"
	}
	return ":x: failed: " + cell(strings.Join(v.Failed, "; "))
}

func verdictLabel(v string) string {
	switch v {
	case VerdictOutside:
		return ":x: outside"
	case VerdictViolation:
		return ":x: violation"
	case VerdictUnknown:
		return ":grey_question: unknown"
	}
	return ":white_check_mark: in"
}

func nodes(n *int) string {
	if n == nil {
		return "after apply"
	}
	return fmt.Sprint(*n)
}

// Everything the plan carries (addresses, attribute paths and values,
// resource names, messages quoting them) comes from the pull request, forks
// included: it must render inert, never as a link, image, mention or HTML.
// Plan values go in code spans (code, cellCode); the review's own sentences,
// which quote plan values, go through text and cell: a Go-quoted string in
// them ("…", as %q writes it) becomes a code span, a word that could become a
// link, a mention or a reference (it holds '@', '#', "://" or "www.") goes in
// a code span whole, and the rest is escaped.

// cell renders a sentence of the review inside a table cell.
func cell(s string) string { return text(s, true) }

// line renders a sentence of the review outside a table.
func line(s string) string { return text(s, false) }

func text(s string, table bool) string {
	s = oneLine(s)
	var b strings.Builder
	lastCode := false
	span := func(v string) {
		if v == "" {
			return
		}
		if lastCode {
			// Two code spans side by side would read as one fence run, and
			// a backtick run in the second could close the first early.
			b.WriteByte(' ')
		}
		if table {
			b.WriteString(cellCode(v))
		} else {
			b.WriteString(code(v))
		}
		lastCode = true
	}
	words := func(t string) {
		for i, w := range strings.Split(t, " ") {
			if i > 0 {
				b.WriteByte(' ')
				lastCode = false
			}
			if w == "" {
				continue
			}
			if risky(w) {
				// Punctuation around the word stays outside its span:
				// "(s3://bucket/key," reads as prose around a value.
				core := strings.TrimLeft(w, "(")
				lead := w[:len(w)-len(core)]
				core = strings.TrimRight(core, ",.;:)")
				trail := w[len(lead)+len(core):]
				b.WriteString(escapeMarkdown(lead))
				if lead != "" {
					lastCode = false
				}
				span(core)
				if trail != "" {
					b.WriteString(escapeMarkdown(trail))
					lastCode = false
				}
				continue
			}
			b.WriteString(escapeMarkdown(w))
			lastCode = false
		}
	}
	for s != "" {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			words(s)
			break
		}
		q, err := strconv.QuotedPrefix(s[i:])
		if err != nil {
			words(s[:i+1])
			s = s[i+1:]
			continue
		}
		v, err := strconv.Unquote(q)
		if err != nil || v == "" {
			words(s[:i+len(q)])
			s = s[i+len(q):]
			continue
		}
		words(s[:i])
		span(v)
		s = s[i+len(q):]
	}
	return b.String()
}

// risky says whether a word could become a link (GFM autolinks: www.,
// scheme://, e-mail addresses), a mention (@user, @org/team) or a GitHub
// reference (#123, owner/repo#123) even with its punctuation escaped.
func risky(w string) bool {
	l := strings.ToLower(w)
	return strings.ContainsAny(w, "@#") || strings.Contains(l, "://") || strings.Contains(l, "www.")
}

// escapeMarkdown escapes what could start Markdown or HTML in a word:
// backslash escapes for emphasis, strikethrough, code, links, images, math
// and table pipes; entities for <, > and &. An underscore between two
// letters or digits cannot open or close emphasis and stays as it is, so
// snake_case names read as written.
func escapeMarkdown(w string) string {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '_':
			if i > 0 && i+1 < len(w) && isAlnum(w[i-1]) && isAlnum(w[i+1]) {
				b.WriteByte(c)
			} else {
				b.WriteString(`\_`)
			}
		case '\\', '`', '*', '[', ']', '!', '~', '|', '$':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// oneLine replaces line endings with spaces: a table row, a list item and a
// code span are each one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(s)
}

func escapeHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// code renders a plan value as a code span, outside a table: nothing in a
// code span is Markdown, HTML or a mention. The fence is one backtick longer
// than the longest run of backticks in the value, and a space pads each side
// where CommonMark would otherwise read the value's own edge: a backtick at
// either end, or a space at both (one is stripped from each side).
func code(s string) string {
	if s == "" {
		return ""
	}
	s = oneLine(s)
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	allSpaces := strings.Trim(s, " ") == ""
	if s[0] == '`' || s[len(s)-1] == '`' || (!allSpaces && s[0] == ' ' && s[len(s)-1] == ' ') {
		s = " " + s + " "
	}
	return fence + s + fence
}

// cellCode is code inside a table cell. GFM splits a row into cells before
// it finds code spans, at every pipe not escaped by a backslash (GitHub
// pairs backslashes from the left: a pipe behind an even run is not
// escaped), and then unescapes \| inside the cell. So each pipe gets a
// backslash unless an odd run of backslashes already escapes it; such a
// value shows with one backslash fewer before that pipe, which no GFM table
// can show exactly.
func cellCode(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '|' && run%2 == 0 {
			b.WriteByte('\\')
		}
		if c == '\\' {
			run++
		} else {
			run = 0
		}
		b.WriteByte(c)
	}
	return code(b.String())
}

// codes lists plan values outside a table.
func codes(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = code(s)
	}
	return strings.Join(out, ", ")
}

// codeList lists plan values in a table cell.
func codeList(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = cellCode(s)
	}
	return strings.Join(out, ", ")
}

func money(f *float64) string {
	if f == nil {
		return "unknown"
	}
	return usd(*f)
}

func signedMoney(f *float64) string {
	if f == nil {
		return "unknown"
	}
	return signedUSD(*f)
}

func usd(f float64) string { return "$" + thousands2(f) }

func signedUSD(f float64) string {
	switch {
	case f > 0:
		return "+$" + thousands2(f)
	case f < 0:
		return "-$" + thousands2(-f)
	}
	return "$0.00"
}

func thousands2(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	intPart, frac, _ := strings.Cut(s, ".")
	return group(intPart) + "." + frac
}

func thousands(f float64) string { return group(fmt.Sprintf("%.0f", f)) }

func signed(f float64) string {
	if f > 0 {
		return "+" + thousands(f)
	}
	if f < 0 {
		return "-" + thousands(-f)
	}
	return "0"
}

func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
