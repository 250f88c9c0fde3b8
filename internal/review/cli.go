package review

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit codes of `mlplatform review`.
const (
	ExitOK           = 0 // the review was written and every --fail-on rule passed
	ExitPolicyFailed = 1 // the review was written and a --fail-on rule failed
	ExitBadInput     = 2 // the plan could not be read, or the command line is wrong
)

// ExitError carries the exit code a command ends with.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ErrPolicyFailed is wrapped by the error of a review whose policy failed.
var ErrPolicyFailed = errors.New("policy failed")

const usageTop = `mlplatform: platform tools for the mlplatform Terraform and Pulumi providers.

Usage:
  mlplatform review [flags] PLAN.json   review a plan for a pull request
  mlplatform approve --config FILE      decide a CPU footprint's launches after apply
  mlplatform help [review|approve]      show help

Run "mlplatform review --help" for the review's flags and examples,
"mlplatform approve --help" for the approver's.
`

// Main runs the mlplatform command line with args (without the program
// name). The returned error is an *ExitError carrying the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageTop)
		return &ExitError{Code: ExitBadInput, Err: errors.New("no command given")}
	}
	switch args[0] {
	case "review":
		return reviewCommand(ctx, args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[1] == "review" {
			return reviewCommand(ctx, []string{"--help"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usageTop)
		return nil
	}
	fmt.Fprint(stderr, usageTop)
	return &ExitError{Code: ExitBadInput, Err: fmt.Errorf("unknown command %q", args[0])}
}

func reviewUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(`Usage: mlplatform review [flags] PLAN.json

Reads a plan and writes what a reviewer needs, offline (no network call):
monthly cost before and after from the catalog's dated prices (schedules and
autoscaling minimums applied, unknown prices listed and never counted as
zero), GPUs added or removed by model and GPU-hours per month, the residency
verdict of every location in the plan (other providers' resources included),
deletes and replacements with stateful ML resources first, and the nodes the
hwprobe validation gate will check.

PLAN.json is the output of "terraform show -json PLANFILE" or of
"pulumi preview --json"; "-" reads standard input.

Flags:
`)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s %s\n      %s", f.Name, name, strings.ReplaceAll(usage, "\n", "\n      "))
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		}
		b.WriteString("\n")
	})
	b.WriteString("\n--fail-on rules (comma-separated; any that fails makes the exit code 1):\n")
	for _, r := range RuleHelp {
		fmt.Fprintf(&b, "  %-18s %s\n", r[0], r[1])
	}
	b.WriteString(`
Exit codes:
  0  the review was written; every --fail-on rule passed (or none was given)
  1  the review was written; a --fail-on rule failed (the reasons are in the
     review and on standard error)
  2  the plan could not be read, or the command line is wrong

Examples:
  terraform plan -out=tfplan && terraform show -json tfplan > plan.json
  mlplatform review plan.json > comment.md
  mlplatform review --format json --output review.json plan.json
  mlplatform review --fail-on 'residency,destroy-stateful,cost-increase>500' plan.json
  (quote the rules: > is a redirection to the shell)
  pulumi preview --json | mlplatform review --jurisdiction AE -
`)
	return b.String()
}

func reviewCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("review", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "markdown", "output format: `markdown` (a pull-request comment) or json (for tools;\nshape in report.schema.json)")
	output := fs.String("output", "", "write the review to `FILE` instead of standard output")
	failOn := fs.String("fail-on", "", "CI policy: `RULES` that make the exit code 1, e.g.\nresidency,destroy-stateful,cost-increase>500 (see below)")
	jurisdiction := fs.String("jurisdiction", "", "residency jurisdiction `CODE` (e.g. AE) when the plan's mlplatform\nprovider configuration names none; the plan's own setting wins")
	limit := fs.Int("max-chars", CommentLimit, "largest Markdown comment in `N` characters; longer reviews are\ncut and say so")
	// Flags may come before or after the plan file.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, reviewUsage(fs))
				return nil
			}
			fmt.Fprintf(stderr, "mlplatform review: %v\n\n%s", err, reviewUsage(fs))
			return &ExitError{Code: ExitBadInput, Err: err}
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	bad := func(err error) error {
		fmt.Fprintf(stderr, "mlplatform review: %v\n", err)
		return &ExitError{Code: ExitBadInput, Err: err}
	}
	if len(positional) != 1 {
		return bad(fmt.Errorf("want one plan file (or - for standard input), got %d arguments; see --help", len(positional)))
	}
	planArg := positional[0]
	if *format != "markdown" && *format != "json" {
		return bad(fmt.Errorf("--format %q: want markdown or json", *format))
	}
	if *limit < 1024 {
		return bad(fmt.Errorf("--max-chars %d: want at least 1024", *limit))
	}
	rules, err := ParseRules(*failOn)
	if err != nil {
		return bad(err)
	}
	data, err := readPlan(planArg, stdin)
	if err != nil {
		return bad(err)
	}
	plan, err := ParsePlan(data)
	if err != nil {
		return bad(fmt.Errorf("%s: %w", planArg, err))
	}
	rep, err := Review(ctx, plan, Options{Jurisdiction: *jurisdiction, FailOn: rules})
	if err != nil {
		return bad(err)
	}
	var out []byte
	if *format == "json" {
		out, err = json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return bad(fmt.Errorf("encoding the review: %w", err))
		}
		out = append(out, '\n')
	} else {
		out = []byte(Markdown(rep, *limit))
	}
	if *output != "" {
		if err := os.WriteFile(*output, out, 0o644); err != nil {
			return bad(fmt.Errorf("writing the review: %w", err))
		}
	} else if _, err := stdout.Write(out); err != nil {
		return bad(fmt.Errorf("writing the review: %w", err))
	}
	if rep.Policy != nil && !rep.Policy.Passed {
		for _, f := range rep.Policy.Failed {
			fmt.Fprintf(stderr, "mlplatform review: policy: %s\n", f)
		}
		return &ExitError{Code: ExitPolicyFailed, Err: fmt.Errorf("%w: %s", ErrPolicyFailed, strings.Join(rep.Policy.Failed, "; "))}
	}
	return nil
}

func readPlan(name string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("reading the plan: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPlanBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	return data, nil
}
