package review

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
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
