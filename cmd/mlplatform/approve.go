package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/review"
)

const approveUsage = `Usage: mlplatform approve --config FILE [--watch] [--interval 30s]

Decide the launches of a validated CPU footprint after apply: every
instance its Auto Scaling group holds in Pending:Wait (a scale-out, a
schedule, a replacement) gets this round's challenge, and is put in service
(CONTINUE) only when its report answers it and passes the gate's own checks:
the signed identity document, the NitroTPM attestation where the footprint
requires one, the profile. A failing instance is abandoned (the group
launches another), or put in service when on_failure is "warn"; one silent
until the validation timeout is abandoned. No node completes its own launch.

For a footprint that joins Slurm, a round also lets go the instances Auto
Scaling holds in Terminating:Wait (a scale-in, an instance refresh) whose
node has left Slurm, its jobs ended (the node's left marker), or never
joined it: their terminate action is completed and they terminate.

FILE is the footprint's approver configuration: the validation_approver
attribute in Terraform (terraform output -raw ... > approver.json), the
validationApprover output in Pulumi; "-" reads standard input. Run it in
the footprint's region with credentials that may complete lifecycle actions
on the group, tag its instances, and read the reports (the validation
guide has the policy); never on a node. The standard AWS environment and
shared configuration apply; the endpoints are held to the configuration's
jurisdiction as the provider's are.

Exit codes: 0 every instance judged was put in service (or none waited);
1 an instance was abandoned or the gate failed; 2 bad input or an AWS
error. With --watch it runs a round every --interval until interrupted,
and exits 2 on bad input only.

Flags:
`

func approveCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mlplatform approve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config := fs.String("config", "", "the footprint's approver configuration `file` (validation_approver); - for standard input (required)")
	watch := fs.Bool("watch", false, "run a round every --interval until interrupted")
	interval := fs.Duration("interval", 30*time.Second, "time between two rounds with --watch (at least 5s)")
	usage := func() string {
		var b strings.Builder
		b.WriteString(approveUsage)
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		return b.String()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage())
			return nil
		}
		fmt.Fprintf(stderr, "mlplatform approve: %v\n\n%s", err, usage())
		return &review.ExitError{Code: review.ExitBadInput, Err: err}
	}
	bad := func(err error) error {
		fmt.Fprintf(stderr, "mlplatform approve: %v\n", err)
		return &review.ExitError{Code: review.ExitBadInput, Err: err}
	}
	switch {
	case fs.NArg() > 0:
		return bad(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case *config == "":
		return bad(errors.New("--config is required"))
	case *interval < 5*time.Second:
		return bad(fmt.Errorf("--interval %s: at least 5s", *interval))
	}
	var raw []byte
	var err error
	if *config == "-" {
		raw, err = io.ReadAll(io.LimitReader(stdin, platform.MaxApproverConfigBytes+1))
	} else {
		raw, err = readLimited(*config, platform.MaxApproverConfigBytes+1)
	}
	if err != nil {
		return bad(err)
	}
	c, err := platform.ParseApproverConfig(raw)
	if err != nil {
		return bad(err)
	}
	cfg := c.EnvConfig()
	if cfg.Polling, err = platform.PollingFromEnv(os.Getenv); err != nil {
		return bad(err)
	}
	cfg.UserAgent = "mlplatform-approve"
	env, err := platform.Open(ctx, cfg)
	if err != nil {
		return bad(err)
	}
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	round := func() (int, error) {
		a, err := env.ApproveLaunches(ctx, c, progress)
		printApproval(stdout, a)
		var ge *platform.GateError
		switch {
		case err != nil && errors.As(err, &ge):
			return review.ExitPolicyFailed, err
		case err != nil:
			return review.ExitBadInput, err
		}
		for _, r := range a.Completed {
			if r != "CONTINUE" {
				return review.ExitPolicyFailed, nil
			}
		}
		return review.ExitOK, nil
	}
	if !*watch {
		code, err := round()
		if err != nil {
			fmt.Fprintf(stderr, "mlplatform approve: %v\n", err)
		}
		if code != review.ExitOK {
			if err == nil {
				err = errors.New("an instance was abandoned")
			}
			return &review.ExitError{Code: code, Err: err}
		}
		return nil
	}
	for {
		if _, err := round(); err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "mlplatform approve: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*interval):
		}
	}
}

// printApproval writes one line per instance whose launch the round
// completed: its id, the result, and the gate's summary of it; then one
// per instance let go after it left Slurm.
func printApproval(w io.Writer, a platform.Approval) {
	ids := make([]string, 0, len(a.Completed))
	for id := range a.Completed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		summary := ""
		for _, v := range a.Verdicts {
			if v.InstanceID == id {
				summary = v.Status + ": " + v.Summary
			}
		}
		if summary == "" {
			summary = "no verdict"
		}
		fmt.Fprintf(w, "%s %s (%s)\n", id, a.Completed[id], summary)
	}
	for _, id := range a.Left {
		fmt.Fprintf(w, "%s terminated (left Slurm)\n", id)
	}
}

func readLimited(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
