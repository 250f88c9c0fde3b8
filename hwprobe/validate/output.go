package validate

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Formats WriteResult accepts.
func Formats() []string { return []string{"table", "json", "junit", "prometheus"} }

// WriteResult writes r in the named format.
func WriteResult(w io.Writer, r Result, format string) error {
	switch format {
	case "", "table":
		return WriteTable(w, r)
	case "json":
		return WriteJSON(w, r)
	case "junit":
		return WriteJUnit(w, r)
	case "prometheus":
		return WritePrometheus(w, r)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats(), ", "))
}

// WriteTable writes a table for people, failures and not-run checks first
// within the original order.
func WriteTable(w io.Writer, r Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tEXPECTED\tOBSERVED\tREASON")
	for _, c := range r.Checks {
		status := strings.ToUpper(string(c.Status))
		if c.Optional && c.Status == NotRun {
			status += " (optional)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", status, c.Name(), dash(c.Expected), dash(c.Observed), dash(c.Reason))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	verdict := map[int]string{ExitPass: "PASS", ExitFail: "FAIL", ExitCannotRun: "NOT RUN"}[r.Exit]
	_, err := fmt.Fprintf(w, "\n%s: %d passed, %d failed, %d not run, %d optional not run\n",
		verdict, r.Summary.Pass, r.Summary.Fail, r.Summary.NotRun, r.Summary.OptionalNotRun)
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes JUnit XML: a failed check is a failure, a required
// check that did not run is an error (never a skip), an optional one that
// did not run is skipped.
func WriteJUnit(w io.Writer, r Result) error {
	s := junitSuite{Name: "hwprobe"}
	if r.Profile != "" {
		s.Name += " " + r.Profile
	}
	for _, c := range r.Checks {
		class, _, _ := strings.Cut(c.ID, ".")
		jc := junitCase{Classname: "hwprobe." + class, Name: c.Name(),
			SystemOut: fmt.Sprintf("expected: %s\nobserved: %s", dash(c.Expected), dash(c.Observed))}
		switch {
		case c.Status == Fail:
			jc.Failure = &junitMessage{Message: c.Reason}
			s.Failures++
		case c.Status == NotRun && c.Optional:
			jc.Skipped = &junitMessage{Message: c.Reason}
			s.Skipped++
		case c.Status == NotRun:
			jc.Error = &junitMessage{Message: "not run: " + c.Reason}
			s.Errors++
		}
		s.Cases = append(s.Cases, jc)
	}
	s.Tests = len(s.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WritePrometheus writes the node_exporter textfile format: one series per
// check with its status as a label, counts per status and the exit code.
func WritePrometheus(w io.Writer, r Result) error {
	var b strings.Builder
	b.WriteString("# HELP hwprobe_check Outcome of one hwprobe check (1 for the status it has).\n# TYPE hwprobe_check gauge\n")
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "hwprobe_check{check=%s,subject=%s,status=%s,optional=\"%t\"} 1\n",
			promLabel(c.ID), promLabel(c.Subject), promLabel(string(c.Status)), c.Optional)
	}
	b.WriteString("# HELP hwprobe_checks Number of hwprobe checks by status.\n# TYPE hwprobe_checks gauge\n")
	counts := map[string]int{"pass": r.Summary.Pass, "fail": r.Summary.Fail, "not-run": r.Summary.NotRun, "optional-not-run": r.Summary.OptionalNotRun}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "hwprobe_checks{status=%s} %d\n", promLabel(k), counts[k])
	}
	b.WriteString("# HELP hwprobe_validate_exit_code Exit code of hwprobe validate: 0 pass, 1 fail, 2 could not run.\n# TYPE hwprobe_validate_exit_code gauge\n")
	fmt.Fprintf(&b, "hwprobe_validate_exit_code %d\n", r.Exit)
	_, err := io.WriteString(w, b.String())
	return err
}

func promLabel(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
