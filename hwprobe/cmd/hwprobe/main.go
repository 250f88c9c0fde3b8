// Command hwprobe tells what a node really is: it probes CPU, GPUs, EFA and
// the EC2 identity, validates them against the profile the platform
// declared, and publishes a report in-region. Run `hwprobe help`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, commandArgs(os.Args[0], os.Args[1:]), newApp(os.Stdout, os.Stderr, os.Getenv))
	stop()
	os.Exit(exitStatus(err, os.Stderr))
}

// exitStatus prints err (unless it only carries an exit code) and returns
// the process exit code.
func exitStatus(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := exitCannotRun
	if e, ok := asExit(err); ok {
		code = e.code
		if e.err == nil {
			return code
		}
		err = e.err
	}
	fmt.Fprintln(stderr, "hwprobe:", err)
	return code
}
