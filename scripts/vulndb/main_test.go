package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const prefix = "golang.org/x/vulndb@v0.0.0-20261105234957-e22db6528018/"

// osvEntry is an OSV entry as data/osv holds them ("modified" left zero).
func osvEntry(id, module string, aliases []string, events ...map[string]string) string {
	e := map[string]any{
		"schema_version": "1.3.1",
		"id":             id,
		"modified":       "0001-01-01T00:00:00Z",
		"aliases":        aliases,
		"summary":        "test entry " + id,
		"affected": []any{map[string]any{
			"package": map[string]any{"name": module, "ecosystem": "Go"},
			"ranges":  []any{map[string]any{"type": "SEMVER", "events": events}},
		}},
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

func moduleZip(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(prefix + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "vulndb.zip")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ev(kind, v string) map[string]string { return map[string]string{kind: v} }

func readJSON(t *testing.T, p string, v any) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
}

// The v1 layout govulncheck reads: three indexes and one file per entry,
// the entries byte for byte as the module has them; the fixed versions as
// x/vulndb computes them.
func TestBuildV1Layout(t *testing.T) {
	text := osvEntry("GO-2026-5970", "golang.org/x/text", []string{"CVE-2026-1"}, ev("introduced", "0"), ev("fixed", "0.39.0"))
	files := map[string]string{
		"data/osv/GO-2026-5970.json": text,
		// stdlib: two branches, each fixed: the latest fix counts.
		"data/osv/GO-2026-6809.json": osvEntry("GO-2026-6809", "stdlib", nil,
			ev("introduced", "0"), ev("fixed", "1.26.10"), ev("introduced", "1.27.0-0"), ev("fixed", "1.27.3")),
		// reintroduced after its last fix: no fixed version.
		"data/osv/GO-2026-0002.json": osvEntry("GO-2026-0002", "golang.org/x/text", nil,
			ev("introduced", "0"), ev("fixed", "0.3.0"), ev("introduced", "0.5.0")),
		// never fixed.
		"data/osv/GO-2026-0001.json": osvEntry("GO-2026-0001", "example.com/a", nil, ev("introduced", "0")),
		// Not OSV entries of the database: skipped.
		"data/reports/GO-2026-5970.yaml":    "id: GO-2026-5970\n",
		"data/excluded/GO-2026-0003.yaml":   "id: GO-2026-0003\n",
		"data/osv/nested/GO-2026-0004.json": "{}",
		"README.md":                         "vulndb",
	}
	out := filepath.Join(t.TempDir(), "db")
	if err := run("", "", moduleZip(t, files), "2026-11-05T23:49:57Z", out); err != nil {
		t.Fatal(err)
	}

	var meta struct{ Modified time.Time }
	readJSON(t, filepath.Join(out, "index", "db.json"), &meta)
	if want := time.Date(2026, 11, 5, 23, 49, 57, 0, time.UTC); !meta.Modified.Equal(want) {
		t.Errorf("db.json modified = %v, want the module's time %v", meta.Modified, want)
	}

	var modules []module
	readJSON(t, filepath.Join(out, "index", "modules.json"), &modules)
	got := map[string]map[string]string{}
	var paths []string
	for _, m := range modules {
		paths = append(paths, m.Path)
		got[m.Path] = map[string]string{}
		for _, v := range m.Vulns {
			got[m.Path][v.ID] = v.Fixed
		}
	}
	if want := []string{"example.com/a", "golang.org/x/text", "stdlib"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("modules.json paths = %v, want %v (sorted)", paths, want)
	}
	wantFixed := map[string]map[string]string{
		"example.com/a":     {"GO-2026-0001": ""},
		"golang.org/x/text": {"GO-2026-0002": "", "GO-2026-5970": "0.39.0"},
		"stdlib":            {"GO-2026-6809": "1.27.3"},
	}
	if !reflect.DeepEqual(got, wantFixed) {
		t.Errorf("modules.json fixed versions = %v, want %v", got, wantFixed)
	}
	if ids := modules[1].Vulns; ids[0].ID != "GO-2026-0002" || ids[1].ID != "GO-2026-5970" {
		t.Errorf("a module's vulns are not sorted by id: %+v", ids)
	}

	var vulns []vuln
	readJSON(t, filepath.Join(out, "index", "vulns.json"), &vulns)
	var ids []string
	for _, v := range vulns {
		ids = append(ids, v.ID)
	}
	if want := []string{"GO-2026-0001", "GO-2026-0002", "GO-2026-5970", "GO-2026-6809"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("vulns.json ids = %v, want %v", ids, want)
	}
	if !reflect.DeepEqual(vulns[2].Aliases, []string{"CVE-2026-1"}) {
		t.Errorf("vulns.json aliases of GO-2026-5970 = %v", vulns[2].Aliases)
	}

	b, err := os.ReadFile(filepath.Join(out, "ID", "GO-2026-5970.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != text {
		t.Errorf("ID/GO-2026-5970.json is not the module's entry byte for byte")
	}
	des, err := os.ReadDir(filepath.Join(out, "ID"))
	if err != nil {
		t.Fatal(err)
	}
	if len(des) != 4 {
		t.Errorf("ID/ holds %d files, want 4", len(des))
	}
	// Nothing left beside the database.
	left, _ := filepath.Glob(out + ".tmp-*")
	if len(left) != 0 {
		t.Errorf("temporary folders left: %v", left)
	}
}

// A database already there is replaced whole: no entry of an older version
// survives.
func TestBuildReplaces(t *testing.T) {
	out := filepath.Join(t.TempDir(), "db")
	old := moduleZip(t, map[string]string{"data/osv/GO-2020-0001.json": osvEntry("GO-2020-0001", "example.com/a", nil, ev("introduced", "0"))})
	if err := run("", "", old, "", out); err != nil {
		t.Fatal(err)
	}
	cur := moduleZip(t, map[string]string{"data/osv/GO-2026-0001.json": osvEntry("GO-2026-0001", "example.com/b", nil, ev("introduced", "0"))})
	if err := run("", "", cur, "", out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "ID", "GO-2020-0001.json")); !os.IsNotExist(err) {
		t.Errorf("an entry of the replaced database survived (stat: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(out, "ID", "GO-2026-0001.json")); err != nil {
		t.Error(err)
	}
}

func TestBuildRefuses(t *testing.T) {
	good := osvEntry("GO-2026-0001", "example.com/a", nil, ev("introduced", "0"))
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no entries", map[string]string{"data/reports/GO-2026-0001.yaml": "id: x"}, "no data/osv/*.json"},
		{"file not named after its id", map[string]string{"data/osv/GO-2026-0002.json": good}, `holds entry "GO-2026-0001"`},
		{"not JSON", map[string]string{"data/osv/GO-2026-0001.json": "id: GO-2026-0001"}, "GO-2026-0001.json: invalid character"},
		{"bad id", map[string]string{"data/osv/GHSA-1.json": strings.Replace(good, "GO-2026-0001", "GHSA-1", 1)}, `id "GHSA-1" is not of the form`},
		{"package without a name", map[string]string{"data/osv/GO-2026-0001.json": strings.Replace(good, `"example.com/a"`, `""`, 1)}, "an affected package has no name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "db")
			err := run("", "", moduleZip(t, tc.files), "", out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a database was written after an error")
			}
		})
	}
}

func TestBuildDuplicate(t *testing.T) {
	e := entry{ID: "GO-2026-0001"}
	if _, err := build([]entry{e, e}, time.Time{}); err == nil || !strings.Contains(err.Error(), "GO-2026-0001 appears twice") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunFlags(t *testing.T) {
	for _, tc := range []struct {
		module, zip, out, want string
	}{
		{"", "x.zip", "", "-out is required"},
		{"", "", "db", "give one of -module and -zip"},
		{"golang.org/x/vulndb@v0", "x.zip", "db", "give one of -module and -zip"},
		{"golang.org/x/vuln@v1.9.0", "", "db", "want golang.org/x/vulndb@VERSION"},
	} {
		if err := run(tc.module, "", tc.zip, "", tc.out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q, %q, %q) = %v, want %q", tc.module, tc.zip, tc.out, err, tc.want)
		}
	}
}

func TestLatestFixed(t *testing.T) {
	r := func(events ...map[string]string) osvRange {
		var o osvRange
		b, _ := json.Marshal(map[string]any{"type": "SEMVER", "events": events})
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, tc := range []struct {
		name   string
		ranges []osvRange
		want   string
	}{
		{"none", nil, ""},
		{"open", []osvRange{r(ev("introduced", "0"))}, ""},
		{"fixed", []osvRange{r(ev("introduced", "0"), ev("fixed", "1.2.0"))}, "1.2.0"},
		// semantic, not string, order: 1.10.0 > 1.9.0.
		{"two branches", []osvRange{r(ev("introduced", "0"), ev("fixed", "1.9.0"), ev("introduced", "1.10.0-0"), ev("fixed", "1.10.2"))}, "1.10.2"},
		{"reintroduced", []osvRange{r(ev("introduced", "0"), ev("fixed", "1.2.0"), ev("introduced", "1.3.0"))}, ""},
		{"two ranges", []osvRange{r(ev("introduced", "0"), ev("fixed", "0.9.0")), r(ev("introduced", "0"), ev("fixed", "0.12.0"))}, "0.12.0"},
		{"not SEMVER", []osvRange{{Type: "GIT"}}, ""},
	} {
		if got := latestFixed(tc.ranges); got != tc.want {
			t.Errorf("%s: latestFixed = %q, want %q", tc.name, got, tc.want)
		}
	}
}
