// Command gotest-summary reads `go test -json` on standard input and writes
// what a person reads: one line per package (ok, FAIL, or no tests), the
// whole output of every failed test and of every package that failed
// outside a test (a build error, a panic, a timeout), and a closing line
// with the counts of tests (subtests included) that passed, failed and
// were skipped. It exits 1 when a test or a package failed, or when no
// test ran at all.
//
//	go test -json ./... | go run ./scripts/gotest-summary [-slowest N] [-counts FILE] [-json FILE]
//
// -slowest lists the N slowest top-level tests; -counts writes the three
// counts, space-separated, to FILE (for make test's table); -json keeps
// the events as read in FILE (to see where the time went: each test's
// start, pauses and end are in it).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// result is what the events said, in the order packages ended.
type result struct {
	packages []pkgResult
	passed   int
	failed   int
	skipped  int
	failures []failure
	tests    []timing // top-level tests that ended
}

type pkgResult struct {
	name    string
	action  string // pass, fail, skip
	elapsed float64
	tests   int
	output  string // the package's own output, kept when it failed
}

type failure struct {
	pkg, test, output string
}

type timing struct {
	pkg, test string
	elapsed   float64
}

func main() {
	if err := run(os.Stdin, os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gotest-summary:", err)
		os.Exit(1)
	}
}

// errFailed is a run with failures: the summary says which.
var errFailed = errors.New("tests failed")

func run(in io.Reader, out io.Writer, args []string) error {
	fs := flag.NewFlagSet("gotest-summary", flag.ContinueOnError)
	slowest := fs.Int("slowest", 0, "list the `N` slowest top-level tests")
	counts := fs.String("counts", "", "write \"passed failed skipped\" to `file`")
	keep := fs.String("json", "", "keep the events as read in `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keep != "" {
		f, err := os.Create(*keep)
		if err != nil {
			return err
		}
		defer f.Close()
		in = io.TeeReader(in, f)
	}
	r, err := parse(in)
	if err != nil {
		return err
	}
	write(out, r, *slowest)
	if *counts != "" {
		if err := os.WriteFile(*counts, fmt.Appendf(nil, "%d %d %d\n", r.passed, r.failed, r.skipped), 0o644); err != nil {
			return err
		}
	}
	if r.failed > 0 || r.passed+r.failed == 0 {
		return errFailed
	}
	for _, p := range r.packages {
		if p.action == "fail" {
			return errFailed
		}
	}
	return nil
}

// parse reads test2json events. Lines that are not JSON (the go command's
// own messages, such as build errors) are kept as their package's output.
func parse(in io.Reader) (result, error) {
	var r result
	outputs := map[string]*strings.Builder{} // "pkg\x00test" -> output
	pkgTests := map[string]int{}
	var stray strings.Builder
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			stray.Write(line)
			stray.WriteByte('\n')
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			b := outputs[key]
			if b == nil {
				b = &strings.Builder{}
				outputs[key] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				p := pkgResult{name: e.Package, action: e.Action, elapsed: e.Elapsed, tests: pkgTests[e.Package]}
				if e.Action == "fail" {
					if b := outputs[key]; b != nil {
						p.output = b.String()
					}
				}
				r.packages = append(r.packages, p)
				continue
			}
			pkgTests[e.Package]++
			switch e.Action {
			case "pass":
				r.passed++
			case "fail":
				r.failed++
				o := ""
				if b := outputs[key]; b != nil {
					o = b.String()
				}
				r.failures = append(r.failures, failure{e.Package, e.Test, o})
			case "skip":
				r.skipped++
			}
			if !strings.Contains(e.Test, "/") {
				r.tests = append(r.tests, timing{e.Package, e.Test, e.Elapsed})
			}
			delete(outputs, key)
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("reading go test -json: %w", err)
	}
	if s := strings.TrimSpace(stray.String()); s != "" {
		r.packages = append(r.packages, pkgResult{name: "(go command)", action: "note", output: s + "\n"})
	}
	return r, nil
}

func write(w io.Writer, r result, slowest int) {
	for _, p := range r.packages {
		switch p.action {
		case "pass":
			if p.tests == 0 {
				fmt.Fprintf(w, "ok      %s %.3fs [no tests to run]\n", p.name, p.elapsed)
			} else {
				fmt.Fprintf(w, "ok      %s %.3fs (%d tests)\n", p.name, p.elapsed, p.tests)
			}
		case "skip":
			fmt.Fprintf(w, "?       %s [no test files]\n", p.name)
		case "fail":
			fmt.Fprintf(w, "FAIL    %s %.3fs\n", p.name, p.elapsed)
		}
	}
	// Failed subtests repeat their parents' failure: show the deepest.
	sort.SliceStable(r.failures, func(i, j int) bool { return r.failures[i].pkg < r.failures[j].pkg })
	for _, f := range r.failures {
		if hasFailedChild(r.failures, f) {
			continue
		}
		fmt.Fprintf(w, "\n--- FAIL: %s (%s)\n%s", f.test, f.pkg, f.output)
	}
	for _, p := range r.packages {
		if (p.action == "fail" || p.action == "note") && p.output != "" {
			fmt.Fprintf(w, "\n=== output of %s\n%s", p.name, p.output)
		}
	}
	if slowest > 0 && len(r.tests) > 0 {
		sort.SliceStable(r.tests, func(i, j int) bool { return r.tests[i].elapsed > r.tests[j].elapsed })
		fmt.Fprintf(w, "\nslowest tests:\n")
		for _, t := range r.tests[:min(slowest, len(r.tests))] {
			fmt.Fprintf(w, "  %7s  %s %s\n", (time.Duration(t.elapsed * float64(time.Second))).Round(100*time.Millisecond), t.pkg, t.test)
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", r.passed, r.failed, r.skipped)
}

func hasFailedChild(all []failure, f failure) bool {
	for _, g := range all {
		if g.pkg == f.pkg && strings.HasPrefix(g.test, f.test+"/") {
			return true
		}
	}
	return false
}
