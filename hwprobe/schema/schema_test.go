package schema_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/bench"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/schema"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

// benchOutput is the document `hwprobe bench --format json` writes.
type benchOutput struct {
	Results []bench.Result `json:"results"`
}

func compile(t *testing.T) *schema.Set {
	t.Helper()
	s, err := schema.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCompile checks every schema against the draft 2020-12 meta-schema
// and the $id and version each one declares.
func TestCompile(t *testing.T) {
	compile(t)
	versions := map[schema.Name]string{schema.Inventory: probe.SchemaVersion, schema.Report: report.SchemaVersion}
	for _, n := range schema.Names() {
		src, err := schema.Source(n)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(src, &doc); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" || doc["$id"] != n.ID() {
			t.Errorf("%s: $schema %v, $id %v", n, doc["$schema"], doc["$id"])
		}
		if v, ok := versions[n]; ok {
			got := doc["properties"].(map[string]any)["schema"]
			if !reflect.DeepEqual(got, map[string]any{"const": v}) {
				t.Errorf("%s: schema property %v, want const %q", n, got, v)
			}
		}
	}
	if _, err := schema.Source("nope"); err == nil {
		t.Error("unknown schema name accepted")
	}
}

// TestBenchNames: the schema's list of benchmark names is the engine's.
func TestBenchNames(t *testing.T) {
	docs := loadDocs(t)
	enum := docs[schema.Bench.ID()]["$defs"].(map[string]any)["name"].(map[string]any)["enum"].([]any)
	var got []string
	for _, e := range enum {
		got = append(got, e.(string))
	}
	if !slices.Equal(got, bench.Names()) {
		t.Errorf("bench.schema.json names\n%v\nbench.Names()\n%v", got, bench.Names())
	}
}

// TestSchemasMatchGoTypes walks each schema beside the Go type hwprobe
// encodes: every object lists exactly the struct's JSON fields, requires
// exactly those without omitempty, forbids others, and gives each field a
// JSON type its Go type can produce. A field added in Go without the
// schema, or the other way round, fails here.
func TestSchemasMatchGoTypes(t *testing.T) {
	docs := loadDocs(t)
	roots := map[schema.Name]reflect.Type{
		schema.Inventory:  reflect.TypeFor[probe.Inventory](),
		schema.Validation: reflect.TypeFor[validate.Result](),
		schema.Report:     reflect.TypeFor[report.Report](),
		schema.Bench:      reflect.TypeFor[benchOutput](),
	}
	for _, n := range schema.Names() {
		t.Run(string(n), func(t *testing.T) {
			w := walker{t: t, docs: docs}
			w.compare(string(n), roots[n], n.ID(), docs[n.ID()])
		})
	}
}

func loadDocs(t *testing.T) map[string]map[string]any {
	t.Helper()
	docs := map[string]map[string]any{}
	for _, n := range schema.Names() {
		src, err := schema.Source(n)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(src, &doc); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		docs[n.ID()] = doc
	}
	return docs
}

type walker struct {
	t    *testing.T
	docs map[string]map[string]any
}

// resolve follows $ref (same document or another schema by $id) and
// returns the node and the document it lives in.
func (w walker) resolve(base string, node map[string]any) (string, map[string]any) {
	for {
		ref, ok := node["$ref"].(string)
		if !ok {
			return base, node
		}
		uri, ptr, _ := strings.Cut(ref, "#")
		if uri != "" {
			base = uri
		}
		doc, ok := w.docs[base]
		if !ok {
			w.t.Fatalf("$ref %s: no schema %s", ref, base)
		}
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			if part == "" {
				continue
			}
			m, ok := cur.(map[string]any)
			if !ok {
				w.t.Fatalf("$ref %s: %s is not an object", ref, part)
			}
			cur = m[part]
		}
		next, ok := cur.(map[string]any)
		if !ok {
			w.t.Fatalf("$ref %s does not resolve", ref)
		}
		node = next
	}
}

func (w walker) compare(path string, typ reflect.Type, base string, node map[string]any) {
	base, node = w.resolve(base, node)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == reflect.TypeFor[time.Time]() {
		if node["type"] != "string" || node["format"] != "date-time" {
			w.t.Errorf("%s: time.Time wants a date-time string, schema has %v", path, node)
		}
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		w.object(path, typ, base, node)
	case reflect.Slice:
		w.wantType(path, node, "array")
		items, ok := node["items"].(map[string]any)
		if !ok {
			w.t.Errorf("%s: array without items", path)
			return
		}
		w.compare(path+"[]", typ.Elem(), base, items)
	case reflect.Map:
		w.wantType(path, node, "object")
		values, ok := node["additionalProperties"].(map[string]any)
		if !ok {
			w.t.Errorf("%s: map without a schema for its values", path)
			return
		}
		w.compare(path+"{}", typ.Elem(), base, values)
	case reflect.String:
		w.wantType(path, node, "string")
	case reflect.Bool:
		w.wantType(path, node, "boolean")
	case reflect.Int, reflect.Int64, reflect.Int32:
		w.wantType(path, node, "integer")
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		w.wantType(path, node, "integer")
		if m, ok := node["minimum"].(float64); !ok || m < 0 {
			w.t.Errorf("%s: unsigned Go field without minimum >= 0", path)
		}
	case reflect.Float64:
		w.wantType(path, node, "number")
	default:
		w.t.Errorf("%s: Go kind %s not handled by this test", path, typ.Kind())
	}
}

func (w walker) object(path string, typ reflect.Type, base string, node map[string]any) {
	w.wantType(path, node, "object")
	if node["additionalProperties"] != false {
		w.t.Errorf("%s: additionalProperties is not false for the closed struct %s", path, typ)
	}
	props, _ := node["properties"].(map[string]any)
	var fields, required []string
	ftypes := map[string]reflect.Type{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields = append(fields, name)
		ftypes[name] = f.Type
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	var schemaProps, schemaReq []string
	for k := range props {
		schemaProps = append(schemaProps, k)
	}
	if rs, ok := node["required"].([]any); ok {
		for _, r := range rs {
			schemaReq = append(schemaReq, r.(string))
		}
	}
	sort.Strings(fields)
	sort.Strings(required)
	sort.Strings(schemaProps)
	sort.Strings(schemaReq)
	if !slices.Equal(fields, schemaProps) {
		w.t.Errorf("%s: %s has JSON fields %v, schema properties %v", path, typ, fields, schemaProps)
	}
	if !slices.Equal(required, schemaReq) {
		w.t.Errorf("%s: %s always writes %v, schema requires %v", path, typ, required, schemaReq)
	}
	for _, name := range fields {
		p, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		w.compare(path+"."+name, ftypes[name], base, p)
	}
}

// wantType checks that the node admits the JSON type: through "type", or
// through const or enum values of that type.
func (w walker) wantType(path string, node map[string]any, want string) {
	switch tv := node["type"].(type) {
	case string:
		if tv != want {
			w.t.Errorf("%s: schema type %q, Go writes %s", path, tv, want)
		}
		return
	case []any:
		if !slices.Contains(tv, any(want)) {
			w.t.Errorf("%s: schema types %v, Go writes %s", path, tv, want)
		}
		return
	}
	var values []any
	if c, ok := node["const"]; ok {
		values = append(values, c)
	}
	if e, ok := node["enum"].([]any); ok {
		values = append(values, e...)
	}
	if len(values) == 0 {
		w.t.Errorf("%s: schema gives no type", path)
	}
	for _, v := range values {
		if got := jsonType(v); got != want && !(want == "number" && got == "integer") {
			w.t.Errorf("%s: schema value %v is %s, Go writes %s", path, v, got, want)
		}
	}
}

func jsonType(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// realDocuments produces one real document per schema on this host: the
// CPU probed, a validation of it against a small profile, the report of
// that validation, and a tiny benchmark run (n = 64, one repetition).
func realDocuments(t *testing.T) map[schema.Name][]byte {
	t.Helper()
	ctx := context.Background()
	inv, err := probe.Probe(ctx, probe.Config{})
	if err != nil {
		t.Fatal(err)
	}
	src := []byte("name = \"schema-test\"\nhost {\n  region = \"me-central-1\"\n}\ncpu {\n  min_cores = 1\n}\n")
	p, diags := profile.Load("schema-test.hcl", src)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res := validate.Validate(ctx, p, inv, nil)
	rep := report.New(inv, &res, report.Options{Version: "test", ProfileName: p.Name, ProfileRegion: p.Region(), ProfileSource: src, Now: time.Now()})
	rs, err := bench.Run(ctx, bench.Options{Quick: true, GemmN: 64, Reps: 1, Only: []string{"cpu_sgemm", "gpu_gemm_bf16"}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[schema.Name][]byte{}
	for n, v := range map[schema.Name]any{schema.Inventory: inv, schema.Validation: res, schema.Report: rep, schema.Bench: benchOutput{rs}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = b
	}
	return out
}

// TestRejectsWrongOutputs starts from real documents that validate, breaks
// one thing in each, and expects the schema to say where.
func TestRejectsWrongOutputs(t *testing.T) {
	s := compile(t)
	docs := realDocuments(t)
	for n, b := range docs {
		if err := s.Validate(n, b); err != nil {
			t.Fatalf("the unbroken %s document does not validate: %v\n%s", n, err, b)
		}
	}
	type doc = map[string]any
	at := func(d doc, path ...any) doc {
		var cur any = d
		for _, p := range path {
			switch k := p.(type) {
			case string:
				cur = cur.(doc)[k]
			case int:
				cur = cur.([]any)[k]
			}
		}
		return cur.(doc)
	}
	tests := []struct {
		name   string
		schema schema.Name
		breakf func(d doc)
		where  string // instance location the error must name
	}{
		{"inventory without cpu", schema.Inventory, func(d doc) { delete(d, "cpu") }, "missing property 'cpu'"},
		{"cores as a string", schema.Inventory, func(d doc) { at(d, "cpu")["cores"] = "2" }, "/cpu/cores"},
		{"unknown field", schema.Inventory, func(d doc) { at(d, "cpu")["cache_bytes"] = 1 }, "/cpu"},
		{"another schema version", schema.Inventory, func(d doc) { d["schema"] = "hwprobe.mlplatform.io/inventory/v2" }, "/schema"},
		{"time not RFC 3339", schema.Inventory, func(d doc) { d["probed_at"] = "yesterday" }, "/probed_at"},
		{"collector not run without a reason", schema.Inventory, func(d doc) {
			c := at(d, "collectors", 0)
			c["ran"] = false
			delete(c, "skipped")
		}, "/collectors/0"},
		{"negative GPU count", schema.Inventory, func(d doc) { at(d, "gpu")["count"] = -1 }, "/gpu/count"},
		{"unknown status", schema.Validation, func(d doc) { at(d, "checks", 0)["status"] = "skipped" }, "/checks/0/status"},
		{"failed check without a reason", schema.Validation, func(d doc) {
			for _, c := range at(d)["checks"].([]any) {
				if c.(doc)["status"] == "pass" {
					c.(doc)["status"] = "fail"
					return
				}
			}
			t.Fatal("no passed check to break")
		}, "missing property 'reason'"},
		{"exit 0 with a failure", schema.Validation, func(d doc) { at(d, "summary")["fail"] = 1 }, "/exit_code"},
		{"report without inventory", schema.Report, func(d doc) { delete(d, "inventory") }, "missing property 'inventory'"},
		{"profile hash not hex", schema.Report, func(d doc) { at(d, "profile")["sha256"] = "abc" }, "/profile/sha256"},
		{"broken inventory inside a report", schema.Report, func(d doc) { at(d, "inventory", "cpu")["threads"] = -2 }, "/inventory/cpu/threads"},
		{"broken check inside a report", schema.Report, func(d doc) { at(d, "validation")["exit_code"] = 3 }, "/validation/exit_code"},
		{"benchmark that does not exist", schema.Bench, func(d doc) { at(d, "results", 0)["name"] = "gpu_infer_latency_p99" }, "/results/0/name"},
		{"not run but with a figure", schema.Bench, func(d doc) { at(d, "results", 1)["value"] = 100.0 }, "/results/1"},
		{"ran without a unit", schema.Bench, func(d doc) { delete(at(d, "results", 0), "unit") }, "/results/0"},
		{"ran without repetitions", schema.Bench, func(d doc) { at(d, "results", 0)["reps"] = 0 }, "/results/0/reps"},
		{"peak without efficiency", schema.Bench, func(d doc) { delete(at(d, "results", 0), "efficiency") }, "/results/0"},
		{"param not a string", schema.Bench, func(d doc) { at(d, "results", 0)["params"].(doc)["n"] = 64 }, "/results/0/params/n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			if err := json.Unmarshal(docs[tt.schema], &d); err != nil {
				t.Fatal(err)
			}
			tt.breakf(d)
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Validate(tt.schema, b)
			if err == nil {
				t.Fatalf("accepted:\n%s", b)
			}
			if !strings.Contains(err.Error(), tt.where) {
				t.Errorf("error does not name %q:\n%v", tt.where, err)
			}
		})
	}
}
