package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/hwprobe/kube/node"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

// kubeDefaultTTL is how long the labels of a run done once stay in NFD's
// feature file; a loop's last as long as three of its intervals.
const kubeDefaultTTL = 24 * time.Hour

// kubePublishTimeout bounds the publishing of one verdict.
const kubePublishTimeout = 30 * time.Second

// kubeMaxMessage bounds the condition's message.
const kubeMaxMessage = 1024

func kubeCmd(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "publish":
			return kubePublishCmd(ctx, a, args[1:])
		case "check":
			return kubeCheckCmd(ctx, a, args[1:])
		}
	}
	fset := newFlags(a, "kube", "publish|check [flags]", `
Tell Kubernetes what the node is and whether it passed its validation,
with the kubelet's own credentials, on the node's own Node:

  - the Node Feature Discovery local feature file
    `+kube.FeaturesDir+`/`+kube.FeaturesFile+`,
    which NFD's worker turns into labels: `+kube.LabelStatus+`
    (`+kube.StatusPassed+` or `+kube.StatusFailed+`) and, on a GPU node, GPU Feature
    Discovery's `+kube.LabelGPUProduct+`, `+kube.LabelGPUCount+` and
    `+kube.LabelGPUMemory+` (MiB per GPU);
  - the label `+kube.LabelStatus+` on the Node itself, for clusters
    without NFD;
  - the Node condition `+kube.ConditionType+`: True or False, its reason
    (`+kube.ReasonChecksPassed+`, `+kube.ReasonCheckFailed+`, `+kube.ReasonCheckNotRun+`, `+kube.ReasonCannotRun+`)
    and a message naming the checks that failed.

The startup taint `+kube.TaintKey+`=`+kube.TaintValuePending+`:`+kube.TaintEffect+` stays:
the provider's validation gate lifts it from a node whose evidence passed;
hwprobe never does (and the API server does not let a node change its own
taints).

Subcommands:
  publish  publish the boot validation's report (hwprobe validate --report)
  check    check the node quickly (the Slurm health check's checks), then
           publish the result; with --interval, again and again`,
		"hwprobe kube check --interval 5m")
	if done, err := parse(a, fset, args); done {
		return err
	}
	return cannotRun(errors.New(`kube: missing subcommand (try "hwprobe kube publish --help" or "hwprobe kube check --help")`))
}

// kubeFlags are the flags publish and check share: where to publish.
type kubeFlags struct {
	kubeconfig, nodeName, featuresDir string
	ttl                               time.Duration
	dryRun                            bool
}

func (k *kubeFlags) register(fset *flag.FlagSet) {
	fset.StringVar(&k.kubeconfig, "kubeconfig", kube.DefaultKubeconfig, "the kubelet's kubeconfig `file`: hwprobe acts with the node's own identity")
	fset.StringVar(&k.nodeName, "node-name", "", "the Node's `name` (default: system:node:NAME of the kubeconfig's client certificate, else of the identity the API server sees)")
	fset.StringVar(&k.featuresDir, "features-dir", kube.FeaturesDir, "NFD's local feature `directory` (\"\": write no feature file)")
	fset.DurationVar(&k.ttl, "features-ttl", 0, "NFD drops the feature file's labels this long after a run (default: 24h; with --interval, three intervals)")
	fset.BoolVar(&k.dryRun, "dry-run", false, "say what would be written and set; change nothing")
}

func kubePublishCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "kube publish", "[--report FILE] [flags]", `
Publish the boot validation's report (hwprobe validate --report, at
`+nodeReportPath+` on a node the platform validated) to
Kubernetes: the NFD feature file, the label `+kube.LabelStatus+`
and the condition `+kube.ConditionType+` of the node's own Node (see
"hwprobe kube --help"). The node passed when every required check of the
report passed: a failed check, a required check that did not run, or a
report without checks is "`+kube.StatusFailed+`" (never a false pass). The
GPU labels come from the report's inventory.

The Node is reached with the kubelet's credentials (--kubeconfig), which
may change their own Node only; its name is --node-name, else the common
name of the kubeconfig's client certificate (system:node:NAME), else, for
credentials without one (an EKS node's IAM token), the user the API server
sees. Each part is attempted even when another failed.

Exit codes: 0 published (whatever the verdict); 2 the report could not be
read, or a part could not be published.`,
		"hwprobe kube publish --report /var/lib/mlplatform/hwprobe/report.json")
	var kf kubeFlags
	kf.register(fset)
	from := fset.String("report", nodeReportPath, "the validation report `file` to publish (hwprobe validate --report)")
	timeout := fset.Duration("timeout", kubePublishTimeout, "give up publishing after this long")
	if done, err := parse(a, fset, args); done {
		return err
	}
	rep, err := readReport("kube publish", *from)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	p := &kubePublisher{a: a, flags: kf}
	if kf.ttl <= 0 {
		p.flags.ttl = kubeDefaultTTL
	}
	v := reportVerdict(rep)
	if err := p.publish(ctx, v, featureInput(rep, v)); err != nil {
		return cannotRun(err)
	}
	return nil
}

func kubeCheckCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "kube check", "[--profile FILE] [--boot-report FILE] [--interval D] [flags]", `
Check the node as the Slurm health check does (hwprobe slurm health-check:
no benchmarks, the host block skipped; CPU and memory, GPUs through NVML:
count, health, NVLink, ECC and row remapping, PCIe, temperature, XID
events for --xid-window, EFA), against the profile, and require that the
boot validation (--boot-report), against this same profile, passed: the
benchmarks ran there. Then publish the result as "hwprobe kube publish"
does: the NFD feature file, the label `+kube.LabelStatus+` and the
condition `+kube.ConditionType+` of the node's own Node. A node hwprobe
could not check (an unreadable profile) is published as failed, with the
reason `+kube.ReasonCannotRun+`.

Once by default; with --interval, again every interval until SIGTERM or
SIGINT (a daemon, for a systemd unit), each check bounded by --timeout, a
failed run said on stderr and the next one tried; a check the signal cuts
short publishes nothing. The feature file's
labels then expire three intervals after a run, so that NFD drops them
when hwprobe stops.

Exit codes (once): 0 the node passed and was published; 1 it failed (and
was published as failed); 2 hwprobe could not check it or could not
publish. With --interval: 0 when stopped by a signal.`,
		"hwprobe kube check --profile /etc/mlplatform/hwprobe/profile.hcl --interval 5m")
	var kf kubeFlags
	kf.register(fset)
	profilePath := fset.String("profile", nodeProfilePath, "profile `file` (HCL) the node was validated against")
	bootReport := fset.String("boot-report", nodeReportPath, "the boot validation's report `file`: it must have passed, for this profile (\"\": not checked)")
	reportPath := fset.String("report", "", "also write each run's JSON report (inventory and checks) to this `file`")
	xidWindow := fset.Duration("xid-window", 5*time.Second, "listen for GPU XID events this long, at most the profile's xid_seconds (0: no XID check)")
	timeout := fset.Duration("timeout", healthCheckDefaultTimeout, "give up a check after this long (publishing its verdict has another "+kubePublishTimeout.String()+")")
	interval := fset.Duration("interval", 0, "check and publish again every `interval` until stopped (0: once)")
	once := fset.Bool("once", false, "check and publish once, then exit (the default without --interval)")
	if done, err := parse(a, fset, args); done {
		return err
	}
	fail := func(err error) error { return cannotRun(fmt.Errorf("kube check: %w", err)) }
	switch {
	case *interval < 0:
		return fail(fmt.Errorf("--interval must be positive, not %s", *interval))
	case *interval > 0 && *once:
		return fail(errors.New("--once and --interval exclude each other"))
	case *interval > 0 && kf.ttl > 0 && kf.ttl <= *interval:
		return fail(fmt.Errorf("--features-ttl %s would let the labels expire between runs every %s", kf.ttl, *interval))
	}
	p := &kubePublisher{a: a, flags: kf}
	if kf.ttl <= 0 {
		p.flags.ttl = kubeDefaultTTL
		if *interval > 0 {
			p.flags.ttl = 3 * *interval
		}
	}
	// step checks the node, then publishes the verdict; a check cut short
	// by the signal publishes nothing (stopping is not failing).
	step := func(ctx context.Context) (bool, error) {
		checkCtx, cancel := context.WithTimeout(ctx, *timeout)
		start := time.Now()
		res, rep, perr := healthCheck(checkCtx, a, *profilePath, *bootReport, *xidWindow)
		cancel()
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		var v kube.Verdict
		var in kube.FeatureInput
		if perr != nil {
			v = kube.Verdict{Reason: kube.ReasonCannotRun, Message: "hwprobe could not check the node: " + perr.Error()}
			in = kube.FeatureInput{Status: v.Status()}
		} else {
			v = resultVerdict(&res)
			in = featureInput(rep, v)
			fmt.Fprintf(a.stdout, "hwprobe kube check: %d checks: %d passed, %d failed, %d not run (%d ms)\n",
				len(res.Checks), res.Summary.Pass, res.Summary.Fail, res.Summary.NotRun+res.Summary.OptionalNotRun, time.Since(start).Milliseconds())
			if *reportPath != "" {
				if err := writeReport(*reportPath, rep); err != nil {
					return false, err
				}
			}
		}
		pubCtx, cancel := context.WithTimeout(ctx, kubePublishTimeout)
		defer cancel()
		if err := p.publish(pubCtx, v, in); err != nil {
			return v.Passed, err
		}
		return v.Passed, perr
	}
	if *interval == 0 {
		passed, err := step(ctx)
		switch {
		case err != nil:
			return cannotRun(err)
		case !passed:
			return exitError{code: exitFailed}
		}
		return nil
	}
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		if _, err := step(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(a.stderr, "hwprobe: kube check: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// reportVerdict is the verdict of a validation report: resultVerdict of
// its validation, and failed without one.
func reportVerdict(rep report.Report) kube.Verdict {
	if rep.Validation == nil {
		return kube.Verdict{Reason: kube.ReasonCheckNotRun, Message: "the report has no validation (hwprobe probe's inventory only)"}
	}
	return resultVerdict(rep.Validation)
}

// resultVerdict is the verdict of a validation: passed only when its exit
// code is a pass and its checks, counted again, say so too; a validation
// without checks has proved nothing and has not passed. The message names
// the checks that failed, else the required checks that did not run.
func resultVerdict(res *validate.Result) kube.Verdict {
	sum := validate.Summarize(res.Profile, res.Checks)
	n := len(res.Checks)
	switch {
	case n == 0:
		return kube.Verdict{Reason: kube.ReasonCheckNotRun, Message: "the validation has no checks"}
	case sum.Exit == validate.ExitPass && res.Exit == validate.ExitPass:
		msg := fmt.Sprintf("%d of %d checks passed", sum.Summary.Pass, n)
		if k := sum.Summary.OptionalNotRun; k > 0 {
			msg += fmt.Sprintf(" (%d optional not run)", k)
		}
		return kube.Verdict{Passed: true, Reason: kube.ReasonChecksPassed, Message: msg}
	case sum.Summary.Fail > 0:
		return kube.Verdict{Reason: kube.ReasonCheckFailed, Message: checksMessage(fmt.Sprintf("%d of %d checks failed", sum.Summary.Fail, n), res.Checks, validate.Fail)}
	case sum.Summary.NotRun > 0:
		return kube.Verdict{Reason: kube.ReasonCheckNotRun, Message: checksMessage(fmt.Sprintf("%d of %d required checks did not run", sum.Summary.NotRun, n), res.Checks, validate.NotRun)}
	}
	// The checks pass but the exit code does not: hwprobe could not run.
	return kube.Verdict{Reason: kube.ReasonCannotRun, Message: fmt.Sprintf("the validation ended with exit code %d", res.Exit)}
}

// checksMessage is head, then "NAME: REASON" of each required check with
// status s, cut to kubeMaxMessage bytes.
func checksMessage(head string, checks []validate.Check, s validate.Status) string {
	var items []string
	for _, c := range checks {
		if c.Status == s && !c.Optional {
			items = append(items, c.Name()+": "+orDefault(c.Reason, string(s)))
		}
	}
	msg := head + ": " + strings.Join(items, "; ")
	if len(msg) > kubeMaxMessage {
		msg = strings.ToValidUTF8(msg[:kubeMaxMessage-3], "") + "..."
	}
	return msg
}

// featureInput is what the feature file says of a node: the verdict, and
// the GPUs of the report's inventory (the first GPU's product name, the
// smallest GPU memory: a node's GPUs are of one model).
func featureInput(rep report.Report, v kube.Verdict) kube.FeatureInput {
	in := kube.FeatureInput{Status: v.Status()}
	if rep.Inventory == nil || !rep.Inventory.GPU.Available || len(rep.Inventory.GPU.GPUs) == 0 {
		return in
	}
	g := rep.Inventory.GPU
	in.GPUCount = max(g.Count, len(g.GPUs))
	in.GPUProduct = g.GPUs[0].Name
	for i, d := range g.GPUs {
		if mib := d.MemoryBytes >> 20; i == 0 || mib < in.GPUMemoryMiB {
			in.GPUMemoryMiB = mib
		}
	}
	return in
}

// kubePublisher publishes verdicts to the node's feature file and Node,
// connecting once it succeeds.
type kubePublisher struct {
	a      *app
	flags  kubeFlags
	client *node.Client
	name   string // the Node's
}

// publish writes the feature file, then sets the label and the condition,
// each attempted even when another failed; it says on stdout what it did.
func (p *kubePublisher) publish(ctx context.Context, v kube.Verdict, in kube.FeatureInput) error {
	out := p.a.stdout
	now := p.a.now()
	fmt.Fprintf(out, "hwprobe kube: verdict %s (%s): %s\n", v.Status(), v.Reason, v.Message)
	var errs []error
	if dir := p.flags.featuresDir; dir != "" {
		expiry := now.Add(p.flags.ttl)
		body := kube.Features(in, expiry)
		labels := kube.Labels(in)
		var pairs []string
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			pairs = append(pairs, k+"="+labels[k])
		}
		what := fmt.Sprintf("%s, expiring %s", strings.Join(pairs, " "), expiry.UTC().Format(time.RFC3339))
		if p.flags.dryRun {
			fmt.Fprintf(out, "hwprobe kube: would write %s/%s: %s\n", dir, kube.FeaturesFile, what)
		} else if path, err := node.WriteFeatures(dir, body); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintf(out, "hwprobe kube: wrote %s: %s\n", path, what)
		}
	}
	name, err := p.node(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if p.flags.dryRun {
		fmt.Fprintf(out, "hwprobe kube: would set on node %s: label %s=%s, condition %s=%s (%s)\n", name, kube.LabelStatus, v.Status(), kube.ConditionType, v.ConditionStatus(), v.Reason)
		return errors.Join(errs...)
	}
	if err := node.SetStatusLabel(ctx, p.client.Nodes, name, v.Status()); err != nil {
		errs = append(errs, err)
	} else {
		fmt.Fprintf(out, "hwprobe kube: node %s: label %s=%s\n", name, kube.LabelStatus, v.Status())
	}
	if c, err := node.SetCondition(ctx, p.client.Nodes, name, v, now); err != nil {
		errs = append(errs, err)
	} else {
		fmt.Fprintf(out, "hwprobe kube: node %s: condition %s=%s (%s), since %s\n", name, c.Type, c.Status, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339))
	}
	return errors.Join(errs...)
}

// node connects with the kubeconfig and finds the Node's name, once.
func (p *kubePublisher) node(ctx context.Context) (string, error) {
	if p.client == nil {
		c, err := p.a.newKube(p.flags.kubeconfig)
		if err != nil {
			return "", err
		}
		p.client = c
	}
	if p.name != "" {
		return p.name, nil
	}
	if p.flags.nodeName != "" {
		p.name = p.flags.nodeName
		return p.name, nil
	}
	name, source, err := p.client.NodeName(ctx)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(p.a.stdout, "hwprobe kube: node %s (from %s)\n", name, source)
	p.name = name
	return name, nil
}
