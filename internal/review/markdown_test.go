package review

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
	gmtext "github.com/yuin/goldmark/text"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	f, err := os.Open("report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := c.AddResource("report.schema.json", f); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// renderHTML renders Markdown as GitHub does: CommonMark, GFM tables, raw
// HTML (<details>) kept.
func renderHTML(t *testing.T, md string) string {
	t.Helper()
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	if err := gm.Convert([]byte(md), &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestMarkdownRenders(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			md := Markdown(reviewFixture(t, name, Options{}), 0)
			h := renderHTML(t, md)
			if n, m := strings.Count(h, "<details>"), strings.Count(h, "</details>"); n != m || n == 0 {
				t.Errorf("%d <details> and %d </details>: want balanced and at least one", n, m)
			}
			// Every table in the Markdown becomes an HTML table: one per
			// header separator line.
			seps := 0
			for _, l := range strings.Split(md, "\n") {
				if strings.HasPrefix(l, "|---") || strings.HasPrefix(l, "|--:") {
					seps++
				}
			}
			if got := strings.Count(h, "<table>"); got != seps {
				t.Errorf("%d HTML tables, want %d (a table did not render)", got, seps)
			}
			// The summary comes first, before anything folded.
			if strings.Index(h, "Monthly cost") > strings.Index(h, "<details>") {
				t.Error("the summary is not first")
			}
			if strings.Contains(h, "<script") {
				t.Error("raw HTML from the plan reached the comment")
			}
		})
	}
}

// bigPlan is a Terraform plan with n buckets outside the jurisdiction and n
// deleted feature stores: a review far over the comment limit.
func bigPlan(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"format_version":"1.2","terraform_version":"1.11.4","resource_changes":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"address":"aws_s3_bucket.b%d","mode":"managed","type":"aws_s3_bucket","name":"b%d","provider_name":"registry.terraform.io/hashicorp/aws","change":{"actions":["create"],"before":null,"after":{"bucket":"bucket-%d","region":"eu-west-1"},"after_unknown":{}}},`, i, i, i)
		fmt.Fprintf(&b, `{"address":"mlplatform_feature_store.f%d","mode":"managed","type":"mlplatform_feature_store","name":"f%d","provider_name":"registry.terraform.io/mlplatform/mlplatform","change":{"actions":["delete"],"before":{"name":"f%d","offline_store":{"s3_uri":"s3://features-%d/x"}},"after":null,"after_unknown":{}},"action_reason":"delete_because_no_resource_config"}`, i, i, i, i)
	}
	b.WriteString(`],"configuration":{"provider_config":{"mlplatform":{"name":"mlplatform","full_name":"registry.terraform.io/mlplatform/mlplatform","expressions":{"residency":{"jurisdiction":{"constant_value":"AE"}}}}}}}`)
	return []byte(b.String())
}

func TestMarkdownTruncation(t *testing.T) {
	p, err := ParsePlan(bigPlan(800))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Review(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	full := renderMarkdown(r, 1<<30, 0)
	if len(full) <= CommentLimit {
		t.Fatalf("the test plan's review is %d bytes: not over the limit", len(full))
	}
	md := Markdown(r, 0)
	if len(md) > CommentLimit {
		t.Fatalf("Markdown is %d bytes, over %d", len(md), CommentLimit)
	}
	if !strings.Contains(md, "**Truncated**") || !strings.Contains(md, fmt.Sprintf("the full review is %d characters", len(full))) {
		t.Error("the truncated comment does not say it is truncated, and how long the full review is")
	}
	if !strings.Contains(md, "more row(s) left out") || !strings.Contains(md, "row(s) left out to stay under the comment limit") {
		t.Error("the truncated comment does not say how many rows it leaves out")
	}
	if !strings.Contains(md, "| **Monthly cost** |") || !strings.Contains(md, "800 outside") {
		t.Error("the summary was cut: it must always survive")
	}
	h := renderHTML(t, md)
	if strings.Count(h, "<details>") != strings.Count(h, "</details>") {
		t.Error("truncation left a <details> open")
	}
	// A tiny limit still gives a well-formed comment that says it is cut.
	small := Markdown(r, 1500)
	if len(small) > 1500 || !strings.Contains(small, "Truncated") {
		t.Errorf("with a 1500-byte limit: %d bytes, truncation noted: %v", len(small), strings.Contains(small, "Truncated"))
	}
	if !strings.Contains(small, "**Truncated**: the review is") {
		t.Error("a 1500-byte limit should need the hard cut of the summary itself")
	}
	if hs := renderHTML(t, small); strings.Count(hs, "<details>") != strings.Count(hs, "</details>") {
		t.Error("the hard cut left a <details> open")
	}
	// Under the limit nothing is cut or noted.
	if md := Markdown(reviewFixture(t, "platform-create", Options{}), 0); strings.Contains(md, "Truncated") {
		t.Error("a short review says it is truncated")
	}
}

func TestMarkdownEscapesPlanText(t *testing.T) {
	data := []byte(`{"format_version":"1.2","resource_changes":[{"address":"aws_s3_bucket.x","mode":"managed","type":"aws_s3_bucket","name":"x","provider_name":"registry.terraform.io/hashicorp/aws","change":{"actions":["delete"],"before":{"bucket":"a|b</details><script>alert(1)</script>\n# heading"},"after":null},"action_reason":"x|y"}]}`)
	p, err := ParsePlan(data)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Review(context.Background(), p, Options{Jurisdiction: "AE"})
	if err != nil {
		t.Fatal(err)
	}
	h := renderHTML(t, Markdown(r, 0))
	if strings.Contains(h, "<script>") || strings.Count(h, "<details>") != strings.Count(h, "</details>") || strings.Contains(h, "<h1>") {
		t.Errorf("plan text broke out of its cell:\n%s", h)
	}
}

// evilValue is a value a pull request (a fork's included) can put in a
// plan: a link, a mention, an image and HTML, if rendered as Markdown.
const evilValue = "[Approve](https://evil.example/x) @org/security-team ![t](https://evil.example/t.png) <img src=x>"

// TestMarkdownPlanValuesInert puts evilValue in a schedule duration, which
// the review quotes in the reason a price is unknown: the comment must show
// it as text, in a code span, and make nothing of it.
func TestMarkdownPlanValuesInert(t *testing.T) {
	plan := fmt.Sprintf(`{"format_version":"1.2","terraform_version":"1.11.4","resource_changes":[{"address":"mlplatform_cpu_footprint.api","mode":"managed","type":"mlplatform_cpu_footprint","name":"api","provider_name":"registry.terraform.io/mlplatform/mlplatform","change":{"actions":["create"],"before":null,"after":{"instance_type":"c7i.xlarge","min":0,"max":4,"desired":2,"schedule":[{"cron":"0 8 * * MON-FRI","desired":2,"duration":%q}]},"after_unknown":{}}}]}`, evilValue)
	p, err := ParsePlan([]byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Review(context.Background(), p, Options{Jurisdiction: "AE"})
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(r, 0)
	if !strings.Contains(md, "`"+evilValue+"`") {
		t.Errorf("the duration is not shown whole in a code span:\n%s", md)
	}
	checkInert(t, md)
}

// TestMarkdownCodeSpans checks the code span rules the renderer relies on:
// the fence, the padding, line endings and pipes in table cells.
func TestMarkdownCodeSpans(t *testing.T) {
	for _, tc := range []struct {
		in, code, cell string
	}{
		{"a", "`a`", "`a`"},
		{"a`b", "``a`b``", "``a`b``"},
		{"`a``", "``` `a`` ```", "``` `a`` ```"},
		{" a ", "`  a  `", "`  a  `"},
		{" a", "` a`", "` a`"},
		{"a|b", "`a|b`", "`a\\|b`"},
		{`a\|b`, "`a\\|b`", "`a\\|b`"},
		{`a\\|b`, "`a\\\\|b`", "`a\\\\\\|b`"},
		{"a\r\nb\nc", "`a b c`", "`a b c`"},
	} {
		if got := code(tc.in); got != tc.code {
			t.Errorf("code(%q) = %q, want %q", tc.in, got, tc.code)
		}
		if got := cellCode(tc.in); got != tc.cell {
			t.Errorf("cellCode(%q) = %q, want %q", tc.in, got, tc.cell)
		}
	}
}

// allowedTags are the HTML elements the renderer's own Markdown and HTML
// make: anything else in the rendered comment came from the plan.
var allowedTags = map[string]bool{
	"h3": true, "p": true, "strong": true, "em": true, "code": true, "ul": true, "li": true,
	"blockquote": true, "table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true,
	"details": true, "summary": true, "sub": true,
}

var (
	tagRE         = regexp.MustCompile(`<(/?)([A-Za-z][A-Za-z0-9-]*)`)
	codeElementRE = regexp.MustCompile(`(?s)<code>.*?</code>`)
	summaryRE     = regexp.MustCompile(`^<details><summary>[^<>@&]*</summary>\n?$`)
)

// checkInert parses md as GitHub does (CommonMark with GFM: tables,
// autolinks, strikethrough) and fails if it holds a link, an image, an
// autolink or HTML the renderer does not write itself, or an '@' or '#'
// outside a code span (a mention or reference): the renderer writes none of
// those, so any there came from the plan.
func checkInert(t *testing.T, md string) {
	t.Helper()
	src := []byte(md)
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	doc := gm.Parser().Parse(gmtext.NewReader(src))
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link, *ast.Image, *ast.AutoLink:
			return ast.WalkStop, fmt.Errorf("a %s in the comment", n.Kind())
		case *ast.CodeSpan:
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML:
			var raw []byte
			for i := 0; i < n.Segments.Len(); i++ {
				seg := n.Segments.At(i)
				raw = append(raw, seg.Value(src)...)
			}
			if s := string(raw); s != "<sub>" && s != "</sub>" {
				return ast.WalkStop, fmt.Errorf("inline HTML %q in the comment", s)
			}
		case *ast.HTMLBlock:
			var raw []byte
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				raw = append(raw, seg.Value(src)...)
			}
			if s := string(raw); s != Marker+"\n" && s != "</details>\n" && !summaryRE.MatchString(s) {
				return ast.WalkStop, fmt.Errorf("an HTML block %q in the comment", s)
			}
		case *ast.Text:
			seg := n.Segment
			if v := seg.Value(src); bytes.ContainsAny(v, "@#") {
				return ast.WalkStop, fmt.Errorf("text %q outside a code span", v)
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatalf("%v; the comment:\n%s", err, md)
	}
	// The same, as GitHub's filters see the HTML: no element the renderer
	// does not make, and no '@' (a mention) outside <code>.
	var out bytes.Buffer
	if err := gm.Renderer().Render(&out, src, doc); err != nil {
		t.Fatal(err)
	}
	h := strings.Replace(codeElementRE.ReplaceAllString(out.String(), "<code></code>"), Marker, "", 1)
	for _, m := range tagRE.FindAllStringSubmatch(h, -1) {
		if !allowedTags[strings.ToLower(m[2])] {
			t.Fatalf("a <%s%s> element in the rendered comment:\n%s", m[1], m[2], out.String())
		}
	}
	if strings.Contains(h, "@") || strings.Contains(h, "&#") {
		t.Fatalf("an '@' outside a code span in the rendered comment:\n%s", out.String())
	}
}

// FuzzMarkdownPlanValues places arbitrary strings wherever the report
// carries a value from the plan (addresses, paths, values, names, and the
// messages that quote them) and checks that the comment holds no link,
// image, mention or HTML made of them.
func FuzzMarkdownPlanValues(f *testing.F) {
	f.Add(evilValue, "aws_s3_bucket.x", `bucket "a" is in eu-west-1`)
	f.Add("a|b</details><script>x</script>\n# h", "`x``", "x\\|y \\\\|z")
	f.Add("www.evil.example", "user@example.com", "#12 owner/repo#3 :x: ~~s~~ *e* _u_ $x$")
	f.Add("[a]: https://evil.example", "<https://evil.example>", "&#64;org &lt;b&gt; \\")
	f.Add("` `` ```", "\"@org\"@team", "(https://evil.example/x),")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		one := func(v float64) *float64 { return &v }
		n := 2
		r := &Report{
			Source: SourceTerraform, ToolVersion: a,
			Cost: Cost{
				CatalogAsOf: b,
				Resources:   []CostLine{{Address: a, Type: b, Action: "create", Before: one(0), After: one(1), Delta: one(1), Basis: c}},
				Unknown:     []Unpriced{{Address: b, Side: "after", Reason: c}},
				NotPriced:   []Unpriced{{Address: c, Reason: a}},
				Prices:      []PriceQuote{{InstanceType: a, Region: b, AsOf: c, Source: a}},
			},
			GPUs: GPUDelta{Models: []GPUModel{{Model: a, After: 8, Delta: 8, ContributingTo: []string{b, c}}}},
			Residency: Residency{
				Jurisdiction: "AE", JurisdictionSource: c, Mode: "enforce", Evaluated: true,
				AllowedRegions: []string{a, b}, Counts: map[string]int{VerdictOutside: 1},
				Locations: []Location{{Address: a, Type: b, Path: c, Kind: a, Value: b, Verdict: VerdictOutside, Rule: c, Reason: a, Fix: b}},
			},
			Destructive: []Destroy{{Address: c, Type: a, Action: "replace", Stateful: true, Holds: b, ReplacePaths: []string{a, c}, ActionReason: b}},
			Validation:  Validation{Declared: true, Gates: []ValidationGate{{Address: b, Type: c, Nodes: &n, Profile: a, Level: b, OnFailure: c, Timeout: a}}},
			Policy:      &Verdict{Rules: []string{"residency"}, Failed: []string{a, b + " " + c}},
		}
		checkInert(t, Markdown(r, 0))
		checkInert(t, Markdown(r, 1500))
		r.Residency = Residency{NotEvaluatedReason: a + `"` + b + `"` + c}
		checkInert(t, Markdown(r, 0))
	})
}
