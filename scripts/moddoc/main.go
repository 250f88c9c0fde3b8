// Command moddoc writes the inputs and outputs tables of each Terraform
// module's README from its variable and output blocks, between the lines
// "<!-- BEGIN_MODDOC -->" and "<!-- END_MODDOC -->". Run from the repository
// root:
//
//	go run ./scripts/moddoc          # rewrite modules/*/README.md
//	go run ./scripts/moddoc -check   # exit 1 when a README is stale
//
// Arguments name module directories; none means every directory under
// modules/ that has a README.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

const (
	beginMarker = "<!-- BEGIN_MODDOC -->"
	endMarker   = "<!-- END_MODDOC -->"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "moddoc:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fset := flag.NewFlagSet("moddoc", flag.ContinueOnError)
	check := fset.Bool("check", false, "do not write: fail when a README differs from what would be written")
	if err := fset.Parse(args); err != nil {
		return err
	}
	dirs := fset.Args()
	if len(dirs) == 0 {
		readmes, err := filepath.Glob(filepath.Join("modules", "*", "README.md"))
		if err != nil {
			return fmt.Errorf("list modules: %w", err)
		}
		for _, r := range readmes {
			dirs = append(dirs, filepath.Dir(r))
		}
	}
	var stale []string
	for _, dir := range dirs {
		changed, err := document(dir, *check)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if changed {
			stale = append(stale, dir)
		}
	}
	if *check && len(stale) > 0 {
		return fmt.Errorf("stale README in %s: run 'go run ./scripts/moddoc'", strings.Join(stale, ", "))
	}
	return nil
}

// document regenerates dir/README.md; it reports whether the file changed
// (or, with check, would change).
func document(dir string, check bool) (bool, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return false, fmt.Errorf("list files: %w", err)
	}
	files := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return false, fmt.Errorf("read %w", err)
		}
		files[filepath.Base(n)] = b
	}
	m, err := Parse(files)
	if err != nil {
		return false, err
	}
	path := filepath.Join(dir, "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read %w", err)
	}
	out, err := Splice(string(readme), Render(m))
	if err != nil {
		return false, err
	}
	if out == string(readme) {
		return false, nil
	}
	if !check {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			return false, fmt.Errorf("write %w", err)
		}
	}
	return true, nil
}

// Variable is one input of a module.
type Variable struct {
	Name        string
	Description string
	Type        string // source text of the type constraint; "any" when absent
	Default     string // source text of the default; "" when required
	Required    bool
}

// Output is one output of a module.
type Output struct {
	Name        string
	Description string
}

// Module is what the tables show.
type Module struct {
	Variables []Variable
	Outputs   []Output
}

// Parse reads the variable and output blocks of a module's files (name to
// content). It is pure: no file is read.
func Parse(files map[string][]byte) (Module, error) {
	var m Module
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		src := files[name]
		f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		if diags.HasErrors() {
			errs = append(errs, diags)
			continue
		}
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		for _, b := range body.Blocks {
			if len(b.Labels) != 1 {
				continue
			}
			switch b.Type {
			case "variable":
				v := Variable{Name: b.Labels[0], Type: "any", Required: true}
				if a, ok := b.Body.Attributes["description"]; ok {
					d, err := literal(a)
					if err != nil {
						errs = append(errs, err)
					}
					v.Description = d
				}
				if a, ok := b.Body.Attributes["type"]; ok {
					v.Type = sourceText(src, a.Expr.Range())
				}
				if a, ok := b.Body.Attributes["default"]; ok {
					v.Default, v.Required = sourceText(src, a.Expr.Range()), false
				}
				m.Variables = append(m.Variables, v)
			case "output":
				o := Output{Name: b.Labels[0]}
				if a, ok := b.Body.Attributes["description"]; ok {
					d, err := literal(a)
					if err != nil {
						errs = append(errs, err)
					}
					o.Description = d
				}
				m.Outputs = append(m.Outputs, o)
			}
		}
	}
	// Required inputs first, then by name.
	sort.SliceStable(m.Variables, func(i, j int) bool {
		if m.Variables[i].Required != m.Variables[j].Required {
			return m.Variables[i].Required
		}
		return m.Variables[i].Name < m.Variables[j].Name
	})
	sort.SliceStable(m.Outputs, func(i, j int) bool { return m.Outputs[i].Name < m.Outputs[j].Name })
	return m, errors.Join(errs...)
}

// literal evaluates a description: a string without references.
func literal(a *hclsyntax.Attribute) (string, error) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || !v.Type().Equals(cty.String) || v.IsNull() {
		return "", fmt.Errorf("%s: description must be a literal string", a.SrcRange)
	}
	return v.AsString(), nil
}

// sourceText is the text of r in src, on one line.
func sourceText(src []byte, r hcl.Range) string {
	if r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return ""
	}
	return strings.Join(strings.Fields(string(src[r.Start.Byte:r.End.Byte])), " ")
}

// Render writes the inputs and outputs tables.
func Render(m Module) string {
	var b strings.Builder
	b.WriteString("## Inputs\n\n")
	if len(m.Variables) == 0 {
		b.WriteString("No inputs.\n")
	} else {
		b.WriteString("| Name | Description | Type | Default | Required |\n| --- | --- | --- | --- | :---: |\n")
		for _, v := range m.Variables {
			def, req := "n/a", "yes"
			if !v.Required {
				def, req = code(v.Default), "no"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", v.Name, cell(v.Description), code(v.Type), def, req)
		}
	}
	b.WriteString("\n## Outputs\n\n")
	if len(m.Outputs) == 0 {
		b.WriteString("No outputs.\n")
	} else {
		b.WriteString("| Name | Description |\n| --- | --- |\n")
		for _, o := range m.Outputs {
			fmt.Fprintf(&b, "| `%s` | %s |\n", o.Name, cell(o.Description))
		}
	}
	return b.String()
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// code is s as inline code in a table cell.
func code(s string) string {
	s = cell(s)
	if strings.Contains(s, "`") {
		return "<code>" + strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s) + "</code>"
	}
	return "`" + s + "`"
}

// Splice replaces what lies between the markers of readme with tables.
func Splice(readme, tables string) (string, error) {
	begin := strings.Index(readme, beginMarker)
	end := strings.Index(readme, endMarker)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("README.md needs the lines %q and %q, in that order", beginMarker, endMarker)
	}
	return readme[:begin+len(beginMarker)] + "\n" + tables + readme[end:], nil
}
