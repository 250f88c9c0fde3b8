// Command emulator runs the acceptance-test AWS emulator in the foreground:
// moto_server behind the acctest shim, which records every request and
// implements the few operations moto lacks. It prints the endpoint, the
// environment to export and a provider "mlplatform" block, and stops moto
// on SIGINT or SIGTERM. `make emulator` runs it; scripts pass --ready-file
// to learn the URL.
//
// With --play-nodes it also stands in for the nodes of the named GPU
// clusters (test code, for demos: the emulator runs no instance): for each
// node it reads the profile from the launch template's user data, runs the
// real hwprobe on this machine against it and publishes the report to the
// emulator's S3 with an identity document signed by a test key, whose
// certificate --signer-cert writes for the configuration to trust.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/hwprobe/probe/machine"
	"github.com/mlplatform/mlplatform/internal/platform"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintf(os.Stderr, "emulator: %v\n", err)
		os.Exit(1)
	}
}

const usage = `Usage: emulator [flags]

Runs moto_server (the AWS emulator) behind the mlplatform test shim on
127.0.0.1 until interrupted, and prints the endpoint URL, the environment to
export and a ready-to-paste provider "mlplatform" block. Every service (ec2,
s3, kms, sagemaker, ssm, sts, ...) is served on the one URL; S3 must be
path-style.

The shim's control API on the same URL:
  GET  /shim/log[?writes=true]   the request log as JSON
  POST /shim/reset               reset moto and the shim
  POST /shim/faults              inject an error, e.g.
       {"service":"ec2","action":"RunInstances","code":"InsufficientInstanceCapacity","message":"...","times":2}

With --play-nodes CLUSTER[,CLUSTER]: a stand-in for those GPU clusters'
nodes (test code; the emulator runs no instance). For each running node it
reads the hwprobe profile from the launch template's user data, runs the
real hwprobe here (--hwprobe, else its test build from this module) against
this machine's CPU or, with --machine, a fixed machine description, and
publishes the report with an identity document signed by a test key. The
configuration must trust that key's certificate (--signer-cert writes it):
validation { trusted_certificates = file(...) }. What each node ran goes to
standard error.

Needs moto_server on PATH (pip install 'moto[server]') or $MOTO_SERVER.

Flags:
`

// options are the command-line flags.
type options struct {
	port      int
	readyFile string
	quiet     bool
	motoLog   bool
	// The node stand-in (--play-nodes).
	playNodes  string
	hwprobe    string
	machine    string
	signerCert string
}

// clusters are the names --play-nodes lists.
func (o options) clusters() []string {
	var out []string
	for _, c := range strings.Split(o.playNodes, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.port, "port", 0, "port for the endpoint (the shim); 0 picks a free one")
	fs.StringVar(&o.readyFile, "ready-file", "", "write the endpoint URL to this file once ready (removed on exit)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not print each request")
	fs.BoolVar(&o.motoLog, "moto-log", false, "copy moto's own log to stderr")
	fs.StringVar(&o.playNodes, "play-nodes", "", "comma-separated GPU cluster names whose nodes to stand in for: run hwprobe here and publish signed reports (test code)")
	fs.StringVar(&o.hwprobe, "hwprobe", "", "with --play-nodes: the hwprobe binary to run (default: build it from this module)")
	fs.StringVar(&o.machine, "machine", acctest.HostMachine, "with --play-nodes: the nodes' CPU: "+acctest.HostMachine+" (this machine's), or a fixed machine description hwprobe's test build probes instead ("+machine.Zen5+", "+machine.SapphireRapids+"; needs --hwprobe to be that build, or none)")
	fs.StringVar(&o.signerCert, "signer-cert", "", "with --play-nodes: write the test identity signer's certificate (PEM) to this file")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.port < 0 || o.port > 65535 {
		return o, fmt.Errorf("--port %d: out of range", o.port)
	}
	if len(o.clusters()) == 0 && (o.hwprobe != "" || o.signerCert != "" || o.machine != acctest.HostMachine) {
		return o, errors.New("--hwprobe, --machine and --signer-cert need --play-nodes")
	}
	if o.machine != acctest.HostMachine {
		if _, err := machine.Builtin(o.machine); err != nil {
			return o, fmt.Errorf("--machine: %w", err)
		}
	}
	if o.playNodes != "" && len(o.clusters()) == 0 {
		return o, fmt.Errorf("--play-nodes %q: no cluster name", o.playNodes)
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	opts := acctest.Options{Shim: acctest.ShimOptions{Addr: fmt.Sprintf("127.0.0.1:%d", o.port)}}
	if !o.quiet {
		opts.Shim.Observe = func(c acctest.Call) { fmt.Fprintln(stderr, c) }
	}
	if o.motoLog {
		opts.Moto.LogOutput = stderr
	}
	h, err := acctest.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		if err := h.Stop(); err != nil {
			fmt.Fprintf(stderr, "emulator: %v\n", err)
		}
	}()

	printBanner(stdout, h)
	if clusters := o.clusters(); len(clusters) > 0 {
		stopPlayer, err := startNodePlayer(ctx, h, o, clusters, stderr)
		if err != nil {
			return err
		}
		defer stopPlayer()
	}
	if o.readyFile != "" {
		if err := writeReadyFile(o.readyFile, h.URL); err != nil {
			return err
		}
		defer os.Remove(o.readyFile)
	}

	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "emulator: stopping")
		return nil
	case <-h.Moto.Done():
		return fmt.Errorf("moto_server exited unexpectedly; its log:\n%s", h.Moto.Log())
	}
}

// startNodePlayer stands in for the nodes of clusters until the returned
// stop is called: see NodePlayer in acctest (test code).
func startNodePlayer(ctx context.Context, h *acctest.Harness, o options, clusters []string, stderr io.Writer) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "mlplatform-nodes-")
	if err != nil {
		return nil, fmt.Errorf("node player: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	bin := o.hwprobe
	if bin == "" {
		if bin, err = acctest.BuildHwprobe(ctx, dir); err != nil {
			return nil, fmt.Errorf("node player: %w", err)
		}
	}
	signer, err := acctest.NewNodeSigner()
	if err != nil {
		return nil, fmt.Errorf("node player: %w", err)
	}
	if o.signerCert != "" {
		if err := os.WriteFile(o.signerCert, []byte(signer.CertPEM), 0o644); err != nil {
			return nil, fmt.Errorf("node player: writing the certificate: %w", err)
		}
	}
	if err := h.SetEnv(); err != nil {
		return nil, fmt.Errorf("node player: %w", err)
	}
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, format+"\n", args...)
	}
	p := acctest.NewNodePlayerFor(h, signer, bin, dir, o.machine, logf)
	cpu := "this machine's CPU"
	if o.machine != acctest.HostMachine {
		cpu = "the fixed machine description " + o.machine
	}
	fmt.Fprintf(stderr, "node player: standing in for the nodes of %s (test code: hwprobe runs here, probing %s)\n", strings.Join(clusters, ", "), cpu)
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		acctest.PlayNodes(pctx, p, clusters)
	}()
	return func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}, nil
}

func printBanner(w io.Writer, h *acctest.Harness) {
	fmt.Fprintf(w, "mlplatform emulator: endpoint %s (moto %s behind the test shim)\n\n", h.URL, h.Moto.URL)
	fmt.Fprintln(w, "# Environment for the AWS SDK, CLI and the provider:")
	env := h.Env()
	keys := []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL", "AWS_EC2_METADATA_DISABLED", platform.PollIntervalEnv}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "export %s=%s\n", k, env[k])
	}
	fmt.Fprintln(w, "\n# Provider configuration:")
	fmt.Fprint(w, h.ProviderConfig(""))
	fmt.Fprintf(w, "\n# Request log: curl -s %s/shim/log   Reset: curl -s -X POST %s/shim/reset\n", h.URL, h.URL)
	fmt.Fprintln(w, "# Press Ctrl-C to stop.")
}

// writeReadyFile writes url to path atomically, so a script polling for the
// file never reads half of it.
func writeReadyFile(path, url string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".emulator-ready-*")
	if err != nil {
		return fmt.Errorf("writing ready file: %w", err)
	}
	_, werr := tmp.WriteString(url + "\n")
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing ready file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing ready file: %w", err)
	}
	return nil
}
