package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/kube/node"
	"github.com/mlplatform/mlplatform/hwprobe/lifecycle"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

// Exit codes shared by every command.
const (
	exitOK        = validate.ExitPass
	exitFailed    = validate.ExitFail
	exitCannotRun = validate.ExitCannotRun
)

// exitError carries an exit code, with an optional message.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e exitError) Unwrap() error { return e.err }

func asExit(err error) (exitError, bool) {
	var e exitError
	ok := errors.As(err, &e)
	return e, ok
}

// cannotRun wraps err as exit code 2.
func cannotRun(err error) error { return exitError{code: exitCannotRun, err: err} }

// app is what commands need from the outside world; tests replace parts.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	fs             fs.FS          // nil: the real root file system
	cpuid          *cpuid.CPUInfo // nil: the real CPU's
	newNVML        func() gpu.Library
	newIMDS        func() probe.IMDS
	newS3          func(ctx context.Context, region string, pathStyle bool) (report.S3, error)
	newAutoScaling func(ctx context.Context, region string) (lifecycle.API, error)
	newAttester    func(ctx context.Context) (attester, error)
	newSecrets     func(ctx context.Context, region string) (slurm.SecretsAPI, error)
	newKube        func(kubeconfig string) (*node.Client, error)
	now            func() time.Time
	// exists says whether a file exists (where Slurm's configuration is);
	// nil: the real file system's answer.
	exists func(string) bool
}

// fileExists is a.exists, or the real file system's answer.
func (a *app) fileExists(f string) bool {
	if a.exists != nil {
		return a.exists(f)
	}
	_, err := os.Stat(f)
	return err == nil
}

func newApp(stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{
		stdout:  stdout,
		stderr:  stderr,
		getenv:  getenv,
		newNVML: gpu.NewLibrary,
		newIMDS: func() probe.IMDS { return probe.NewIMDSClient() },
		newS3: func(ctx context.Context, region string, pathStyle bool) (report.S3, error) {
			return report.NewS3Client(ctx, region, pathStyle)
		},
		newAutoScaling: func(ctx context.Context, region string) (lifecycle.API, error) {
			return lifecycle.NewClient(ctx, region)
		},
		newAttester: newNitroTPM,
		newSecrets: func(ctx context.Context, region string) (slurm.SecretsAPI, error) {
			return slurm.NewSecretsClient(ctx, region)
		},
		newKube: func(kubeconfig string) (*node.Client, error) {
			return node.Connect(kubeconfig, "hwprobe/"+version())
		},
		now: time.Now,
	}
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

func commands() []command {
	return []command{
		{"probe", "print the node's hardware inventory as JSON", probeCmd},
		{"validate", "check the node against a profile and run its benchmarks", validateCmd},
		{"report", "publish a validation report to S3 (report publish), answer the gate's challenges (report serve)", reportCmd},
		{"bench", "run training and inference benchmarks", benchCmd},
		{"slurm", "join the node to Slurm (slurm join), leave it at shutdown (slurm leave); its health check: drain a failing node, resume it when it passes (slurm health-check)", slurmCmd},
		{"kube", "publish the node's verdict and GPUs to Kubernetes: NFD labels, its Node's label and condition (kube publish, kube check)", kubeCmd},
		{"lifecycle", "complete the node's Auto Scaling launch lifecycle action (lifecycle complete)", lifecycleCmd},
		{"version", "print the hwprobe version", versionCmd},
	}
}

func run(ctx context.Context, args []string, a *app) error {
	if len(args) == 0 {
		usage(a.stderr)
		return exitError{code: exitCannotRun}
	}
	if err := configureNVML(a); err != nil {
		return cannotRun(err)
	}
	if err := configureMachine(a); err != nil {
		return cannotRun(err)
	}
	if err := configureAttester(a); err != nil {
		return cannotRun(err)
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] != name {
			return run(ctx, []string{rest[0], "--help"}, a)
		}
		usage(a.stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, a, rest)
		}
	}
	usage(a.stderr)
	return cannotRun(fmt.Errorf("unknown command %q", name))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `hwprobe tells what a node really is, and whether that is what was declared.

Usage:
  hwprobe <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Exit codes:
  0  all checks passed (or the command succeeded)
  1  a check failed
  2  hwprobe could not run: bad flags or profile, probe error, a required check not run

Run "hwprobe <command> --help" for a command's flags and an example.
`)
}

// newFlags makes a flag set whose --help prints the command's description,
// flags, exit codes and example.
func newFlags(a *app, name, synopsis, description, example string) *flag.FlagSet {
	fset := flag.NewFlagSet("hwprobe "+name, flag.ContinueOnError)
	fset.SetOutput(a.stderr)
	fset.Usage = func() {
		w := fset.Output()
		fmt.Fprintf(w, "Usage:\n  hwprobe %s %s\n\n%s\n\nFlags:\n", name, synopsis, strings.TrimSpace(description))
		fset.PrintDefaults()
		fmt.Fprintf(w, "\nExit codes: 0 success, 1 a check failed, 2 could not run.\n\nExample:\n  %s\n", example)
	}
	return fset
}

// parse parses args; --help prints usage to stdout and ends the command
// with exit code 0.
func parse(a *app, fset *flag.FlagSet, args []string) (done bool, err error) {
	fset.SetOutput(io.Discard)
	err = fset.Parse(args)
	fset.SetOutput(a.stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fset.SetOutput(a.stdout)
		fset.Usage()
		return true, nil
	case err != nil:
		fmt.Fprintln(a.stderr, "hwprobe:", err)
		fset.Usage()
		return true, exitError{code: exitCannotRun}
	case fset.NArg() > 0:
		return true, cannotRun(fmt.Errorf("unexpected argument %q", fset.Arg(0)))
	}
	return false, nil
}

// probeFlags are the flags every probing command shares.
type probeFlags struct {
	noGPU, noIMDS bool
	identityCert  string
	timeout       time.Duration
}

func (p *probeFlags) register(fset *flag.FlagSet) {
	fset.BoolVar(&p.noGPU, "no-gpu", false, "do not load NVML (the GPU section says GPU probing was not configured)")
	fset.BoolVar(&p.noIMDS, "no-imds", false, "do not ask the EC2 instance metadata service")
	fset.StringVar(&p.identityCert, "identity-cert", "", "PEM `file` with the AWS RSA-2048 certificate(s) for the region, to verify the signed identity document")
	fset.DurationVar(&p.timeout, "timeout", 2*time.Minute, "give up probing after this long")
}

func (p *probeFlags) config(a *app, xid time.Duration) (probe.Config, error) {
	cfg := probe.Config{FS: a.fs, CPUID: a.cpuid, XIDWindow: xid, Now: a.now}
	if !p.noGPU {
		cfg.NVML = a.newNVML()
	}
	if !p.noIMDS {
		cfg.IMDS = a.newIMDS()
	}
	if p.identityCert != "" {
		certs, err := readCerts(p.identityCert)
		if err != nil {
			return cfg, err
		}
		cfg.TrustedCerts = certs
	}
	return cfg, nil
}

func versionCmd(_ context.Context, a *app, args []string) error {
	fset := newFlags(a, "version", "", "Print the hwprobe version.", "hwprobe version")
	if done, err := parse(a, fset, args); done {
		return err
	}
	fmt.Fprintln(a.stdout, "hwprobe", version())
	return nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func readFile(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read %w", err)
	}
	return b, nil
}
