// Package schema publishes the JSON Schemas (draft 2020-12) of hwprobe's
// JSON outputs, embedded in the binary and kept beside the code that
// produces them:
//
//	inventory.schema.json   hwprobe probe
//	validation.schema.json  hwprobe validate --format json
//	report.schema.json      hwprobe validate --report FILE, hwprobe report publish
//	bench.schema.json       hwprobe bench --format json
//
// Tests check real outputs of each command against them, so the schemas
// cannot drift from what hwprobe writes.
package schema

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed *.schema.json
var files embed.FS

// Name names one schema.
type Name string

// The published schemas.
const (
	Inventory  Name = "inventory"
	Validation Name = "validation"
	Report     Name = "report"
	Bench      Name = "bench"
)

// Names lists every schema.
func Names() []Name { return []Name{Inventory, Validation, Report, Bench} }

// File is the schema's file name, e.g. "report.schema.json".
func (n Name) File() string { return string(n) + ".schema.json" }

// ID is the schema's $id, the URI other schemas and documents refer to it
// by.
func (n Name) ID() string { return "https://hwprobe.mlplatform.io/schema/" + string(n) + "/v1.json" }

// FS holds the schema files.
func FS() fs.FS { return files }

// Source returns the text of the named schema.
func Source(n Name) ([]byte, error) {
	if !slices.Contains(Names(), n) {
		return nil, fmt.Errorf("unknown schema %q", n)
	}
	b, err := files.ReadFile(n.File())
	if err != nil {
		return nil, fmt.Errorf("read schema %s: %w", n, err)
	}
	return b, nil
}

// Set is the compiled schemas, each checked against the draft 2020-12
// meta-schema, with formats (date-time) asserted.
type Set struct {
	schemas map[Name]*jsonschema.Schema
}

// Compile compiles every schema.
func Compile() (*Set, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, n := range Names() {
		src, err := Source(n)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("parse schema %s: %w", n, err)
		}
		if err := c.AddResource(n.ID(), doc); err != nil {
			return nil, fmt.Errorf("add schema %s: %w", n, err)
		}
	}
	s := &Set{schemas: map[Name]*jsonschema.Schema{}}
	for _, n := range Names() {
		sch, err := c.Compile(n.ID())
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", n, err)
		}
		s.schemas[n] = sch
	}
	return s, nil
}

// Validate checks a JSON document against the named schema. The error
// lists every violation with its location in the document.
func (s *Set) Validate(n Name, doc []byte) error {
	sch, ok := s.schemas[n]
	if !ok {
		return fmt.Errorf("unknown schema %q", n)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("parse %s document: %w", n, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%s document: %w", n, err)
	}
	return nil
}
