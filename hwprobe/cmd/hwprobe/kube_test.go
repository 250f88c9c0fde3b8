//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/gpu/gputest"
	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/hwprobe/kube/node"
	"github.com/mlplatform/mlplatform/hwprobe/kube/node/nodetest"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/probe/machine"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

var kubeNow = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

// kubeNode is a registered node as the kubelet leaves it: Ready, the
// provider's labels, the startup taint.
func kubeNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelCluster: "train-a"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: kube.TaintKey, Value: kube.TaintValuePending, Effect: corev1.TaintEffect(kube.TaintEffect)}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.NewTime(kubeNow), LastTransitionTime: metav1.NewTime(kubeNow.Add(-time.Hour))},
		}},
	}
}

// reviewsAs answers a SelfSubjectReview with user.
type reviewsAs string

func (u reviewsAs) Create(context.Context, *authnv1.SelfSubjectReview, metav1.CreateOptions) (*authnv1.SelfSubjectReview, error) {
	return &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{Username: string(u)}}}, nil
}

type kubeRun struct {
	code           int
	stdout, stderr string
	api            *nodetest.Nodes
}

// runKube runs hwprobe with args against a stand-in of the API server
// holding Node gpu-0, reached with gpu-0's token (no client certificate:
// its name comes from the API server's review), on the fixed machine
// description zen5 with lib's GPUs; the clock advances a minute a call.
func runKube(t *testing.T, ctx context.Context, lib func() gpu.Library, kubeErr error, args ...string) kubeRun {
	t.Helper()
	api := nodetest.New(kubeNode("gpu-0"))
	api.Self = "gpu-0"
	var out, errb bytes.Buffer
	a := newApp(&out, &errb, func(string) string { return "" })
	d, err := machine.Builtin(machine.Zen5)
	if err != nil {
		t.Fatal(err)
	}
	a.fs, a.cpuid = d.FS(), d.CPUID()
	a.newNVML = lib
	a.newIMDS = func() probe.IMDS { t.Fatal("IMDS used"); return nil }
	calls := 0
	a.now = func() time.Time { calls++; return kubeNow.Add(time.Duration(calls-1) * time.Minute) }
	a.newKube = func(kubeconfig string) (*node.Client, error) {
		if kubeErr != nil {
			return nil, kubeErr
		}
		if kubeconfig != "/etc/test/kubeconfig" {
			t.Errorf("kubeconfig %q", kubeconfig)
		}
		return &node.Client{Config: &rest.Config{BearerToken: "k8s-aws-v1.test"}, Nodes: api, Reviews: reviewsAs("system:node:gpu-0")}, nil
	}
	code := exitStatus(run(ctx, append(args, "--kubeconfig", "/etc/test/kubeconfig"), a), &errb)
	return kubeRun{code, out.String(), errb.String(), api}
}

// h100Inventory is a DGX H100's GPU section, as hwprobe probe reports it.
func h100Inventory(n int) *probe.Inventory {
	inv := &probe.Inventory{Schema: probe.SchemaVersion, GPU: gpu.Section{Available: true, Count: n}}
	for i := range n {
		inv.GPU.GPUs = append(inv.GPU.GPUs, gpu.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", MemoryBytes: 81559 << 20})
	}
	return inv
}

// writeKubeReport writes a validation report with checks (summarized) to
// a file.
func writeKubeReport(t *testing.T, inv *probe.Inventory, profileSource []byte, checks ...validate.Check) string {
	t.Helper()
	res := validate.Summarize("p5", checks)
	rep := report.New(inv, &res, report.Options{Version: "test", ProfileName: "p5", ProfileSource: profileSource, Now: kubeNow.Add(-time.Hour)})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	passCheck  = validate.Check{ID: "gpu.count", Status: validate.Pass, Expected: "8", Observed: "8"}
	failCheck  = validate.Check{ID: "gpu.nvlink", Subject: "gpu3", Status: validate.Fail, Reason: "17 of 18 links active"}
	benchCheck = validate.Check{ID: "bench.gpu_gemm_bf16", Subject: "gpu0", Status: validate.Pass}
)

func TestKubeCommandHelp(t *testing.T) {
	r := runCmd(t, nil, nil, "kube")
	if r.code != 2 || !strings.Contains(r.stderr, "missing subcommand") {
		t.Errorf("kube: %+v", r)
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"kube", "--help"}, []string{kube.FeaturesDir + "/" + kube.FeaturesFile, kube.LabelGPUProduct, kube.ConditionType, "hwprobe never", "Example:"}},
		{[]string{"kube", "publish", "--help"}, []string{"--report", "--kubeconfig", kube.DefaultKubeconfig, "--node-name", "system:node:NAME", "never a false pass", "Exit codes: 0 published", "Example:"}},
		{[]string{"kube", "check", "--help"}, []string{"--interval", "-once", "--boot-report", "Slurm health check", "SIGTERM", "-features-ttl", "Example:"}},
	} {
		r := runCmd(t, nil, nil, tt.args...)
		for _, w := range tt.want {
			if r.code != 0 || !strings.Contains(r.stdout, w) {
				t.Errorf("%v: exit %d, lacks %q", tt.args, r.code, w)
			}
		}
	}
	if r := runCmd(t, nil, nil, "help"); !strings.Contains(r.stdout, "kube ") {
		t.Error("help does not list kube")
	}
}

func TestKubeVerdict(t *testing.T) {
	many := make([]validate.Check, 60)
	for i := range many {
		many[i] = validate.Check{ID: "gpu.ecc", Subject: "gpu" + strings.Repeat("9", i%3), Status: validate.Fail, Reason: "uncorrected ECC errors: 2 volatile, 5 aggregate"}
	}
	tests := []struct {
		name    string
		checks  []validate.Check
		exit    *int // the recorded exit code, when it differs from the checks'
		passed  bool
		reason  string
		message string
	}{
		{"passed", []validate.Check{passCheck, benchCheck}, nil, true, kube.ReasonChecksPassed, "2 of 2 checks passed"},
		{"optional not run", []validate.Check{passCheck, {ID: "host.identity_verified", Status: validate.NotRun, Optional: true}}, nil, true, kube.ReasonChecksPassed, "1 of 2 checks passed (1 optional not run)"},
		{"failed", []validate.Check{passCheck, failCheck, {ID: "gpu.count", Status: validate.NotRun, Reason: "NVML library not found"}}, nil, false, kube.ReasonCheckFailed, "1 of 3 checks failed: gpu.nvlink gpu3: 17 of 18 links active"},
		{"not run", []validate.Check{passCheck, {ID: "gpu.count", Status: validate.NotRun, Reason: "NVML library not found"}}, nil, false, kube.ReasonCheckNotRun, "1 of 2 required checks did not run: gpu.count: NVML library not found"},
		{"no checks", nil, nil, false, kube.ReasonCheckNotRun, "the validation has no checks"},
		{"exit code says it could not run", []validate.Check{passCheck}, intPtr(validate.ExitCannotRun), false, kube.ReasonCannotRun, "exit code 2"},
		{"exit code says pass, a check failed", []validate.Check{failCheck}, intPtr(validate.ExitPass), false, kube.ReasonCheckFailed, "1 of 1 checks failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := validate.Summarize("p5", tt.checks)
			if tt.exit != nil {
				res.Exit = *tt.exit
			}
			v := resultVerdict(&res)
			if v.Passed != tt.passed || v.Reason != tt.reason || !strings.Contains(v.Message, tt.message) {
				t.Errorf("got %+v, want %v %s %q", v, tt.passed, tt.reason, tt.message)
			}
		})
	}
	res := validate.Summarize("p5", many)
	if v := resultVerdict(&res); len(v.Message) != kubeMaxMessage || !strings.HasPrefix(v.Message, "60 of 60 checks failed: gpu.ecc gpu: uncorrected") || !strings.HasSuffix(v.Message, "...") {
		t.Errorf("long message (%d bytes): %q", len(v.Message), v.Message)
	}
	if v := reportVerdict(report.Report{Schema: report.SchemaVersion}); v.Passed || v.Reason != kube.ReasonCheckNotRun || !strings.Contains(v.Message, "no validation") {
		t.Errorf("no validation: %+v", v)
	}
}

func intPtr(v int) *int { return &v }

func TestKubeFeatureInput(t *testing.T) {
	mixed := h100Inventory(2)
	mixed.GPU.GPUs[1].MemoryBytes = 40960 << 20
	noGPU := &probe.Inventory{GPU: gpu.Section{Available: false, Reason: "NVML library not found"}}
	passed := kube.Verdict{Passed: true}
	for _, tt := range []struct {
		name string
		inv  *probe.Inventory
		v    kube.Verdict
		want kube.FeatureInput
	}{
		{"DGX H100", h100Inventory(8), passed, kube.FeatureInput{Status: kube.StatusPassed, GPUProduct: "NVIDIA H100 80GB HBM3", GPUCount: 8, GPUMemoryMiB: 81559}},
		{"a GPU missing", h100Inventory(7), kube.Verdict{}, kube.FeatureInput{Status: kube.StatusFailed, GPUProduct: "NVIDIA H100 80GB HBM3", GPUCount: 7, GPUMemoryMiB: 81559}},
		{"smallest memory", mixed, passed, kube.FeatureInput{Status: kube.StatusPassed, GPUProduct: "NVIDIA H100 80GB HBM3", GPUCount: 2, GPUMemoryMiB: 40960}},
		{"no NVML", noGPU, passed, kube.FeatureInput{Status: kube.StatusPassed}},
		{"no inventory", nil, kube.Verdict{}, kube.FeatureInput{Status: kube.StatusFailed}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := featureInput(report.Report{Inventory: tt.inv}, tt.v); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// readFeatures parses the feature file in dir.
func readFeatures(t *testing.T, dir string) (map[string]string, time.Time) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, kube.FeaturesFile))
	if err != nil {
		t.Fatal(err)
	}
	labels, exp, err := kube.ParseFeatures(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return labels, exp
}

// checkNode checks what the stand-in API server holds of gpu-0: the
// label and the condition hwprobe set, the kubelet's Ready condition and
// the startup taint untouched.
func checkNode(t *testing.T, api *nodetest.Nodes, status corev1.ConditionStatus, reason, message string) {
	t.Helper()
	n := api.Node("gpu-0")
	c := nodetest.Condition(n, kube.ConditionType)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) {
		t.Errorf("condition %+v, want %s %s %q", c, status, reason, message)
	}
	want := kube.StatusFailed
	if status == corev1.ConditionTrue {
		want = kube.StatusPassed
	}
	if n.Labels[kube.LabelStatus] != want || n.Labels[kube.LabelCluster] != "train-a" {
		t.Errorf("labels %v", n.Labels)
	}
	if r := nodetest.Condition(n, corev1.NodeReady); r == nil || r.Status != corev1.ConditionTrue {
		t.Errorf("Ready lost: %+v", n.Status.Conditions)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != kube.TaintKey {
		t.Errorf("taints %+v", n.Spec.Taints)
	}
}

func TestKubePublish(t *testing.T) {
	ctx := context.Background()
	h100 := map[string]string{kube.LabelGPUCount: "8", kube.LabelGPUMemory: "81559", kube.LabelGPUProduct: "NVIDIA-H100-80GB-HBM3"}
	with := func(status string) map[string]string {
		l := maps.Clone(h100)
		l[kube.LabelStatus] = status
		return l
	}
	passed := writeKubeReport(t, h100Inventory(8), []byte("gpu {}\n"), passCheck, benchCheck)
	failed := writeKubeReport(t, h100Inventory(8), []byte("gpu {}\n"), passCheck, failCheck)
	cpuOnly := writeKubeReport(t, &probe.Inventory{Schema: probe.SchemaVersion}, []byte("cpu {}\n"), validate.Check{ID: "cpu.threads", Status: validate.Pass})
	for _, tt := range []struct {
		name      string
		report    string
		args      []string
		code      int
		out       []string
		labels    map[string]string // nil: no feature file
		condition corev1.ConditionStatus
		reason    string
		message   string
	}{
		{name: "passed", report: passed, code: exitOK, labels: with(kube.StatusPassed), condition: corev1.ConditionTrue, reason: kube.ReasonChecksPassed, message: "2 of 2 checks passed",
			out: []string{"verdict passed (ChecksPassed)", "node gpu-0 (from the API server's review of the credentials)", "wrote ", "label mlplatform.io/hwprobe.status=passed", "condition HwprobeValidated=True (ChecksPassed), since 2026-11-28T10:00:00Z"}},
		{name: "failed", report: failed, code: exitOK, labels: with(kube.StatusFailed), condition: corev1.ConditionFalse, reason: kube.ReasonCheckFailed, message: "gpu.nvlink gpu3: 17 of 18 links active",
			out: []string{"verdict failed (CheckFailed): 1 of 2 checks failed: gpu.nvlink gpu3: 17 of 18 links active"}},
		{name: "CPU node: no GPU labels", report: cpuOnly, code: exitOK, labels: map[string]string{kube.LabelStatus: kube.StatusPassed}, condition: corev1.ConditionTrue, reason: kube.ReasonChecksPassed},
		{name: "node name given", report: passed, args: []string{"--node-name", "gpu-0"}, code: exitOK, labels: with(kube.StatusPassed), condition: corev1.ConditionTrue, reason: kube.ReasonChecksPassed},
		{name: "no feature file", report: passed, args: []string{"--features-dir", ""}, code: exitOK, condition: corev1.ConditionTrue, reason: kube.ReasonChecksPassed},
		{name: "another node: refused, the feature file written", report: failed, args: []string{"--node-name", "other"}, code: exitCannotRun, labels: with(kube.StatusFailed),
			out: []string{`label node other: nodes "other" is forbidden`, "may read and change only their own Node", `read node other: nodes "other" is forbidden`}},
		{name: "dry run", report: failed, args: []string{"--dry-run"}, code: exitOK,
			out: []string{"would write", "mlplatform.io/hwprobe.status=failed nvidia.com/gpu.count=8", "would set on node gpu-0: label mlplatform.io/hwprobe.status=failed, condition HwprobeValidated=False (CheckFailed)"}},
		{name: "not a report", report: writeProfile(t, healthyProfile), code: exitCannotRun, out: []string{"is not a hwprobe.mlplatform.io/report/v1 report"}},
		{name: "no report", report: filepath.Join(t.TempDir(), "none.json"), code: exitCannotRun, out: []string{"none.json"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "features.d")
			args := append([]string{"kube", "publish", "--report", tt.report, "--features-dir", dir}, tt.args...)
			r := runKube(t, ctx, nil, nil, args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.out {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("output lacks %q:\n%s%s", w, r.stdout, r.stderr)
				}
			}
			if tt.labels != nil && !slicesHas(args, "--features-dir", "") {
				labels, exp := readFeatures(t, dir)
				if !maps.Equal(labels, tt.labels) || !exp.Equal(kubeNow.Add(kubeDefaultTTL)) {
					t.Errorf("feature file: %v expiring %s, want %v expiring %s", labels, exp, tt.labels, kubeNow.Add(kubeDefaultTTL))
				}
			} else if _, err := os.Stat(dir); err == nil {
				t.Errorf("%s written", dir)
			}
			if tt.condition != "" {
				checkNode(t, r.api, tt.condition, tt.reason, tt.message)
			} else if n := r.api.Node("gpu-0"); nodetest.Condition(n, kube.ConditionType) != nil || n.Labels[kube.LabelStatus] != "" {
				t.Errorf("node changed: %+v", n)
			}
			if tt.name == "dry run" && len(r.api.Patches()) != 0 {
				t.Errorf("dry run patched: %+v", r.api.Patches())
			}
		})
	}
}

// slicesHas says whether args hold flag followed by value.
func slicesHas(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

// TestKubePublishNoCluster: without the API server (no kubeconfig yet),
// the feature file is still written, and the command says why the rest
// was not.
func TestKubePublishNoCluster(t *testing.T) {
	dir := t.TempDir()
	rep := writeKubeReport(t, h100Inventory(8), []byte("gpu {}\n"), passCheck)
	r := runKube(t, context.Background(), nil, errors.New("kubeconfig /etc/test/kubeconfig: no such file"), "kube", "publish", "--report", rep, "--features-dir", dir)
	if r.code != exitCannotRun || !strings.Contains(r.stderr, "kubeconfig /etc/test/kubeconfig: no such file") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if labels, _ := readFeatures(t, dir); labels[kube.LabelStatus] != kube.StatusPassed {
		t.Errorf("labels %v", labels)
	}
}

// TestKubeCheck runs the Slurm health check's checks (with go-nvml's
// mock DGX H100 on the fixed machine zen5) and publishes their verdict.
func TestKubeCheck(t *testing.T) {
	ctx := context.Background()
	profile := writeProfile(t, healthyProfile)
	src, _ := os.ReadFile(profile)
	bootPassed := writeKubeReport(t, h100Inventory(8), src, passCheck, benchCheck)
	bootFailed := writeKubeReport(t, h100Inventory(8), src, passCheck, validate.Check{ID: "bench.gpu_gemm_bf16", Subject: "gpu0", Status: validate.Fail, Reason: "41% of peak"})
	missing := func() gpu.Library { s := gputest.DGXH100(); gputest.RemoveGPU(s, 3); return s }
	for _, tt := range []struct {
		name      string
		lib       func() gpu.Library
		profile   string
		boot      string
		code      int
		status    corev1.ConditionStatus
		reason    string
		message   string
		gpuCount  string
		reportOut bool
	}{
		{name: "healthy", lib: healthy, profile: profile, boot: bootPassed, code: exitOK, status: corev1.ConditionTrue, reason: kube.ReasonChecksPassed, message: "checks passed", gpuCount: "8", reportOut: true},
		{name: "a GPU missing", lib: missing, profile: profile, boot: bootPassed, code: exitFailed, status: corev1.ConditionFalse, reason: kube.ReasonCheckFailed, message: "gpu.count: found 7 GPUs, profile expects 8", gpuCount: "7"},
		{name: "boot validation failed", lib: healthy, profile: profile, boot: bootFailed, code: exitFailed, status: corev1.ConditionFalse, reason: kube.ReasonCheckFailed, message: "boot.validation: boot validation: bench.gpu_gemm_bf16 gpu0 fail", gpuCount: "8"},
		{name: "no boot report", lib: healthy, profile: profile, boot: filepath.Join(t.TempDir(), "none.json"), code: exitFailed, status: corev1.ConditionFalse, reason: kube.ReasonCheckNotRun, message: "boot.validation: no boot report", gpuCount: "8"},
		{name: "boot report not required", lib: healthy, profile: profile, boot: "", code: exitOK, status: corev1.ConditionTrue, reason: kube.ReasonChecksPassed, gpuCount: "8"},
		{name: "no NVML", lib: noDriver, profile: profile, boot: bootPassed, code: exitFailed, status: corev1.ConditionFalse, reason: kube.ReasonCheckNotRun, message: "NVML library not found"},
		{name: "no profile: published as failed", lib: healthy, profile: filepath.Join(t.TempDir(), "none.hcl"), boot: bootPassed, code: exitCannotRun, status: corev1.ConditionFalse, reason: kube.ReasonCannotRun, message: "hwprobe could not check the node: read open"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(t.TempDir(), "run.json")
			r := runKube(t, ctx, tt.lib, nil, "kube", "check", "--profile", tt.profile, "--boot-report", tt.boot, "--xid-window", "0", "--features-dir", dir, "--report", out)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			checkNode(t, r.api, tt.status, tt.reason, tt.message)
			labels, exp := readFeatures(t, dir)
			if labels[kube.LabelStatus] != map[bool]string{true: kube.StatusPassed, false: kube.StatusFailed}[tt.status == corev1.ConditionTrue] || labels[kube.LabelGPUCount] != tt.gpuCount {
				t.Errorf("feature labels %v", labels)
			}
			if tt.gpuCount != "" && labels[kube.LabelGPUProduct] != "NVIDIA-H100-80GB-HBM3" {
				t.Errorf("product %q", labels[kube.LabelGPUProduct])
			}
			if !exp.After(kubeNow.Add(23 * time.Hour)) {
				t.Errorf("expiry %s", exp)
			}
			if _, err := os.Stat(out); (err == nil) != (tt.code != exitCannotRun) {
				t.Errorf("run report written: %v", err)
			}
		})
	}
}

func TestKubeCheckFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--once", "--interval", "1m"}, "--once and --interval exclude each other"},
		{[]string{"--interval", "-1s"}, "--interval must be positive"},
		{[]string{"--interval", "10m", "--features-ttl", "5m"}, "would let the labels expire between runs"},
	} {
		r := runKube(t, context.Background(), healthy, nil, append([]string{"kube", "check"}, tt.args...)...)
		if r.code != exitCannotRun || !strings.Contains(r.stderr, tt.want) || len(r.api.Patches()) != 0 {
			t.Errorf("%v: exit %d, %q", tt.args, r.code, r.stderr)
		}
	}
}

// TestKubeCheckLoop: with --interval the check runs and publishes until
// the signal (here the context's end), each run's heartbeat new, the
// condition's transition time that of the first run, the feature file's
// expiry three intervals after the last run; then exit 0.
func TestKubeCheckLoop(t *testing.T) {
	profile := writeProfile(t, healthyProfile)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(2*time.Second, cancel) // SIGTERM
	done := make(chan kubeRun, 1)
	go func() {
		done <- runKube(t, ctx, healthy, nil, "kube", "check", "--profile", profile, "--boot-report", "", "--xid-window", "0", "--features-dir", dir, "--interval", "200ms")
	}()
	r := <-done
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var runs int
	for _, p := range r.api.Patches() {
		if p.Subresource == "status" {
			runs++
		}
	}
	if runs < 3 {
		t.Fatalf("%d runs in 2 s at 200ms: %s", runs, r.stdout)
	}
	c := nodetest.Condition(r.api.Node("gpu-0"), kube.ConditionType)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != kube.ReasonChecksPassed || c.LastTransitionTime.Time.Before(kubeNow) || !c.LastHeartbeatTime.Time.After(c.LastTransitionTime.Time) {
		t.Errorf("condition %+v", c)
	}
	_, exp := readFeatures(t, dir)
	if want := c.LastHeartbeatTime.Time.Add(600 * time.Millisecond); !exp.Equal(want.Truncate(time.Second)) {
		t.Errorf("expiry %s, want %s (three intervals after the last run)", exp, want)
	}
	if strings.Count(r.stdout, "hwprobe kube: node gpu-0 (from") != 1 {
		t.Errorf("the node's name looked up more than once:\n%s", r.stdout)
	}
}
