package main

import (
	"strings"
	"testing"
)

const variablesTF = `
variable "name" {
  description = "Cluster name | unique."
  type        = string
}

variable "tags" {
  description = "Tags."
  type        = map(string)
  default = {
    team = "ml"
  }
}

variable "untyped" {
  default = null
}
`

const outputsTF = `
output "ids" {
  description = "Node ids."
  value       = [1, 2]
}
`

func TestParseRender(t *testing.T) {
	m, err := Parse(map[string][]byte{"variables.tf": []byte(variablesTF), "outputs.tf": []byte(outputsTF)})
	if err != nil {
		t.Fatal(err)
	}
	got := Render(m)
	for _, want := range []string{
		"| `name` | Cluster name \\| unique. | `string` | n/a | yes |",
		"| `tags` | Tags. | `map(string)` | `{ team = \"ml\" }` | no |",
		"| `untyped` |  | `any` | `null` | no |",
		"| `ids` | Node ids. |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tables lack %q:\n%s", want, got)
		}
	}
	// Required inputs come first.
	if strings.Index(got, "`name`") > strings.Index(got, "`tags`") {
		t.Errorf("required input not first:\n%s", got)
	}
}

func TestParseErrors(t *testing.T) {
	for name, src := range map[string]string{
		"syntax":      "variable \"x\" {",
		"description": "variable \"x\" {\n  description = var.y\n}\n",
	} {
		if _, err := Parse(map[string][]byte{"v.tf": []byte(src)}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestSplice(t *testing.T) {
	readme := "# m\n\n" + beginMarker + "\nold\n" + endMarker + "\ntail\n"
	got, err := Splice(readme, "new\n")
	if err != nil || got != "# m\n\n"+beginMarker+"\nnew\n"+endMarker+"\ntail\n" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := Splice("no markers", "x"); err == nil {
		t.Error("README without markers accepted")
	}
}

// FuzzParse: module source is outside input to the generator; it must
// never panic.
func FuzzParse(f *testing.F) {
	f.Add(variablesTF)
	f.Add(outputsTF)
	f.Fuzz(func(t *testing.T, src string) {
		m, err := Parse(map[string][]byte{"f.tf": []byte(src)})
		if err == nil {
			_ = Render(m)
		}
	})
}
