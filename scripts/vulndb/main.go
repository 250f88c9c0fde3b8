// Command vulndb builds a Go vulnerability database that govulncheck reads
// with -db file:///DIR, offline, from the OSV entries of a pinned
// golang.org/x/vulndb module: its zip (the Go module proxy serves it like any
// module) holds every report as data/osv/GO-YYYY-NNNN.json. govulncheck wants
// the v1 layout of the database that vuln.go.dev serves:
//
//	index/db.json       {"modified": T}, T the newest entry's (or the module's time)
//	index/modules.json  [{"path", "vulns": [{"id", "modified", "fixed"}]}], by path
//	index/vulns.json    [{"id", "modified", "aliases"}], by id
//	ID/GO-YYYY-NNNN.json  each OSV entry, as the module has it
//
// "fixed" in modules.json is the version from which no later version is
// affected (empty when a range is open or reintroduced after its last fix):
// govulncheck skips an entry whose fixed version is not above the version
// in use, so it must never be too low. It is computed as x/vulndb computes it.
//
// Usage:
//
//	vulndb -module golang.org/x/vulndb@VERSION [-sum h1:...] -out DIR
//	vulndb -zip FILE [-time RFC3339] -out DIR
//
// With -module it runs `go mod download -json` (the go command checks the
// module against go.sum's checksum database) and, with -sum, refuses a
// module whose hash is not the pinned one. DIR is written whole beside
// itself and renamed into place, so a reader never sees half a database.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

func main() {
	module := flag.String("module", "", "golang.org/x/vulndb@VERSION: download it with the go command")
	sum := flag.String("sum", "", "with -module: the module's expected h1: hash")
	zipFile := flag.String("zip", "", "a golang.org/x/vulndb module zip already at hand (instead of -module)")
	modTime := flag.String("time", "", "with -zip: the module's time (RFC 3339), the database's time when no entry has one")
	out := flag.String("out", "", "the folder to write the database to (replaced whole)")
	flag.Parse()
	if err := run(*module, *sum, *zipFile, *modTime, *out); err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
}

func run(module, sum, zipFile, modTime, out string) error {
	if out == "" {
		return errors.New("-out is required")
	}
	if (module == "") == (zipFile == "") {
		return errors.New("give one of -module and -zip")
	}
	var t time.Time
	if module != "" {
		d, err := download(module, sum)
		if err != nil {
			return err
		}
		zipFile, t = d.Zip, d.Time
	} else if modTime != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, modTime); err != nil {
			return fmt.Errorf("-time: %w", err)
		}
	}
	zr, err := zip.OpenReader(zipFile)
	if err != nil {
		return fmt.Errorf("opening the module zip: %w", err)
	}
	defer zr.Close()
	entries, err := readEntries(&zr.Reader)
	if err != nil {
		return fmt.Errorf("reading %s: %w", zipFile, err)
	}
	db, err := build(entries, t)
	if err != nil {
		return err
	}
	if err := db.write(out); err != nil {
		return err
	}
	fmt.Printf("vulndb: %d entries, %d modules, modified %s, in %s\n",
		len(db.entries), len(db.modules), db.modified.Format(time.RFC3339), out)
	return nil
}

// downloaded is what `go mod download -json` tells of one module.
type downloaded struct {
	Path, Version, Zip, Info, Sum, Error string
	Time                                 time.Time
}

func download(module, wantSum string) (downloaded, error) {
	var d downloaded
	if !strings.HasPrefix(module, "golang.org/x/vulndb@") {
		return d, fmt.Errorf("-module %q: want golang.org/x/vulndb@VERSION", module)
	}
	cmd := exec.Command("go", "mod", "download", "-json", module)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	// With -json, a failure is told in the Error field (and the exit status).
	if jerr := json.Unmarshal(b, &d); jerr != nil && err == nil {
		err = jerr
	}
	if d.Error != "" {
		return d, fmt.Errorf("go mod download %s: %s", module, d.Error)
	}
	if err != nil {
		return d, fmt.Errorf("go mod download %s: %w: %s", module, err, strings.TrimSpace(stderr.String()))
	}
	if wantSum != "" && d.Sum != wantSum {
		return d, fmt.Errorf("go mod download %s: hash %s, but %s is pinned", module, d.Sum, wantSum)
	}
	info, err := os.ReadFile(d.Info)
	if err != nil {
		return d, fmt.Errorf("reading the module's info: %w", err)
	}
	var i struct{ Time time.Time }
	if err := json.Unmarshal(info, &i); err != nil {
		return d, fmt.Errorf("reading the module's info %s: %w", d.Info, err)
	}
	d.Time = i.Time
	return d, nil
}

// entry is one OSV entry: what the indexes need, and its bytes as written.
type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases,omitempty"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
		Ranges []osvRange `json:"ranges"`
	} `json:"affected"`

	raw []byte
}

type osvRange struct {
	Type   string `json:"type"`
	Events []struct {
		Introduced string `json:"introduced,omitempty"`
		Fixed      string `json:"fixed,omitempty"`
	} `json:"events"`
}

var idPattern = regexp.MustCompile(`^GO-[0-9]{4}-[0-9]{4,}$`)

// readEntries reads every data/osv/*.json of a golang.org/x/vulndb module
// zip (whose files are named golang.org/x/vulndb@VERSION/data/osv/...).
func readEntries(zr *zip.Reader) ([]entry, error) {
	var entries []entry
	for _, f := range zr.File {
		_, rest, ok := strings.Cut(f.Name, "/data/osv/")
		if !ok || strings.Contains(rest, "/") || path.Ext(rest) != ".json" {
			continue
		}
		e, err := readEntry(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if e.ID+".json" != rest {
			return nil, fmt.Errorf("%s: holds entry %q: want a file named after its id", f.Name, e.ID)
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, errors.New("no data/osv/*.json: not a golang.org/x/vulndb module zip")
	}
	return entries, nil
}

func readEntry(f *zip.File) (entry, error) {
	var e entry
	r, err := f.Open()
	if err != nil {
		return e, err
	}
	defer r.Close()
	if e.raw, err = io.ReadAll(r); err != nil {
		return e, err
	}
	if err := json.Unmarshal(e.raw, &e); err != nil {
		return e, err
	}
	if !idPattern.MatchString(e.ID) {
		return e, fmt.Errorf("id %q is not of the form GO-YYYY-NNNN", e.ID)
	}
	for _, a := range e.Affected {
		if a.Package.Name == "" {
			return e, errors.New("an affected package has no name")
		}
	}
	return e, nil
}

type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Fixed    string    `json:"fixed,omitempty"`
}

type module struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

type vuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases,omitempty"`
}

type database struct {
	modified time.Time
	modules  []*module
	vulns    []vuln
	entries  []entry
}

// build indexes the entries. fallback is the database's time when no entry
// has one (the module's OSV files leave "modified" to the deployment).
func build(entries []entry, fallback time.Time) (*database, error) {
	db := &database{entries: entries}
	byPath := map[string]*module{}
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.ID] {
			return nil, fmt.Errorf("entry %s appears twice", e.ID)
		}
		seen[e.ID] = true
		if e.Modified.After(db.modified) {
			db.modified = e.Modified
		}
		db.vulns = append(db.vulns, vuln{ID: e.ID, Modified: e.Modified, Aliases: e.Aliases})
		for _, a := range e.Affected {
			m := byPath[a.Package.Name]
			if m == nil {
				m = &module{Path: a.Package.Name, Vulns: []moduleVuln{}}
				byPath[m.Path] = m
				db.modules = append(db.modules, m)
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: e.ID, Modified: e.Modified, Fixed: latestFixed(a.Ranges)})
		}
	}
	if db.modified.IsZero() || fallback.After(db.modified) {
		db.modified = fallback
	}
	sort.Slice(db.modules, func(i, j int) bool { return db.modules[i].Path < db.modules[j].Path })
	for _, m := range db.modules {
		sort.SliceStable(m.Vulns, func(i, j int) bool { return m.Vulns[i].ID < m.Vulns[j].ID })
	}
	sort.Slice(db.vulns, func(i, j int) bool { return db.vulns[i].ID < db.vulns[j].ID })
	return db, nil
}

// latestFixed is the version from which no later one is affected, over the
// SEMVER ranges (unprefixed versions): the highest fix, or "" when a range
// introduces the vulnerability again after it. As x/vulndb's
// osvutils.LatestFixed.
func latestFixed(ranges []osvRange) string {
	latest := ""
	for _, r := range ranges {
		if r.Type != "SEMVER" {
			continue
		}
		for _, ev := range r.Events {
			if ev.Fixed != "" && before(latest, ev.Fixed) {
				latest = ev.Fixed
			}
		}
		for _, ev := range r.Events {
			if ev.Introduced != "" && ev.Introduced != "0" && before(latest, ev.Introduced) {
				latest = ""
				break
			}
		}
	}
	return latest
}

// before reports whether the unprefixed semantic version v sorts before w
// ("" before every version).
func before(v, w string) bool { return semver.Compare("v"+v, "v"+w) < 0 }

func (db *database) write(out string) error {
	out = filepath.Clean(out)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), filepath.Base(out)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := db.writeTo(tmp); err != nil {
		return fmt.Errorf("writing the database: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func (db *database) writeTo(dir string) error {
	for _, d := range []string{"index", "ID"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	indexes := []struct {
		name string
		v    any
	}{
		{"db.json", struct {
			Modified time.Time `json:"modified"`
		}{db.modified}},
		{"modules.json", db.modules},
		{"vulns.json", db.vulns},
	}
	for _, ix := range indexes {
		b, err := json.Marshal(ix.v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "index", ix.name), b, 0o644); err != nil {
			return err
		}
	}
	for _, e := range db.entries {
		if err := os.WriteFile(filepath.Join(dir, "ID", e.ID+".json"), e.raw, 0o644); err != nil {
			return err
		}
	}
	return nil
}
