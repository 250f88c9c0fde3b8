// Command emulator runs the acceptance-test AWS emulator in the foreground:
// moto_server behind the acctest shim, which records every request and
// implements the few operations moto lacks. It prints the endpoint, the
// environment to export and a provider "mlplatform" block, and stops moto
// on SIGINT or SIGTERM. `make emulator` runs it; scripts pass --ready-file
// to learn the URL.
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
	"syscall"

	"github.com/mlplatform/mlplatform/acctest"
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

Needs moto_server on PATH (pip install 'moto[server]') or $MOTO_SERVER.

Flags:
`

// options are the command-line flags.
type options struct {
	port      int
	readyFile string
	quiet     bool
	motoLog   bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.port, "port", 0, "port for the endpoint (the shim); 0 picks a free one")
	fs.StringVar(&o.readyFile, "ready-file", "", "write the endpoint URL to this file once ready (removed on exit)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not print each request")
	fs.BoolVar(&o.motoLog, "moto-log", false, "copy moto's own log to stderr")
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

func printBanner(w io.Writer, h *acctest.Harness) {
	fmt.Fprintf(w, "mlplatform emulator: endpoint %s (moto %s behind the test shim)\n\n", h.URL, h.Moto.URL)
	fmt.Fprintln(w, "# Environment for the AWS SDK, CLI and the provider:")
	env := h.Env()
	keys := []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL", "AWS_EC2_METADATA_DISABLED"}
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
