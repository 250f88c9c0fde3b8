package platform

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/internal/catalog"
)

// guideC7iFootprint is the footprint the validation guide shows: its
// profile in the guide is this render.
func guideC7iFootprint(t *testing.T) string {
	t.Helper()
	c, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	it, ok := c.Lookup("c7i.large")
	if !ok {
		t.Fatal("c7i.large is not in the catalog")
	}
	eff := 0.5
	v := ValidationSpec{
		Benchmarks:       []BenchmarkThreshold{{Name: "cpu_sgemm", MinEfficiency: &eff}},
		ReportsS3URI:     "s3://uae-hwprobe-reports/footprints/",
		ReportsKMSKeyARN: "arn:aws:kms:me-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
	}
	return ProfileForCPUFootprint("smb-inference", v, nil, NodeFactsFromCatalog(it, 0), "me-central-1", []string{"mec1-az3", "mec1-az1"})
}

// A footprint that requires amx_bf16 or avx512_bf16 gets cpu_bf16_gemm in
// its profile, one that requires amx_int8 or avx512_vnni cpu_int8_gemm: on
// a type with AMX (c7i) the AMX kernel at AMXEfficiency of the tile peak,
// required as the backend; on one without (c6i: AVX-512 with VNNI) the
// AVX-512 kernel at half its peak, required as the backend too (a node
// without the feature runs another kernel). A benchmark the block
// declares keeps its own thresholds and is not added twice; other
// features add nothing.
func TestFootprintProfileFeatureBenchmarks(t *testing.T) {
	c, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	it, ok := c.Lookup("c7i.large")
	if !ok {
		t.Fatal("c7i.large is not in the catalog")
	}
	facts := NodeFactsFromCatalog(it, 0)
	base := ValidationSpec{ReportsS3URI: "s3://b/p/"}
	bf16 := "benchmark \"cpu_bf16_gemm\" {\n  min_efficiency = 0.02\n  backend = \"builtin-amx-bf16\"\n}"
	int8 := "benchmark \"cpu_int8_gemm\" {\n  min_efficiency = 0.02\n  backend = \"builtin-amx-int8\"\n}"
	for _, tt := range []struct {
		required []string
		want     []string
		not      []string
	}{
		{[]string{"amx_tile", "amx_bf16"}, []string{bf16}, []string{"cpu_int8_gemm"}},
		{[]string{"amx_int8"}, []string{int8}, []string{"cpu_bf16_gemm"}},
		{[]string{"avx512_vnni"}, []string{int8}, []string{"cpu_bf16_gemm"}},
		{[]string{"avx512_bf16", "amx_int8", "amx_bf16"}, []string{bf16, int8}, nil},
		{[]string{"amx_tile", "avx512f"}, nil, []string{"cpu_bf16_gemm", "cpu_int8_gemm"}},
		{nil, nil, []string{"cpu_bf16_gemm", "cpu_int8_gemm"}},
	} {
		got := ProfileForCPUFootprint("fp", base, tt.required, facts, "me-central-1", []string{"mec1-az1"})
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("required %v: the profile lacks\n%s\n%s", tt.required, w, got)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(got, n) {
				t.Errorf("required %v: the profile has %s:\n%s", tt.required, n, got)
			}
		}
	}
	// Declared: its threshold wins, once.
	eff := 0.3
	declared := base
	declared.Benchmarks = []BenchmarkThreshold{{Name: "cpu_int8_gemm", MinEfficiency: &eff, Optional: true}}
	got := ProfileForCPUFootprint("fp", declared, []string{"amx_int8", "avx512_vnni"}, facts, "me-central-1", nil)
	if strings.Count(got, "cpu_int8_gemm") != 1 || !strings.Contains(got, "min_efficiency = 0.3") || strings.Contains(got, "min_efficiency = 0.5") {
		t.Errorf("a declared cpu_int8_gemm was changed or doubled:\n%s", got)
	}
	if len(declared.Benchmarks) != 1 {
		t.Errorf("the declared block was modified: %+v", declared.Benchmarks)
	}
	// Without AMX on the chosen type: the AVX-512 kernel at half its peak,
	// required as the backend.
	c6i, ok := c.Lookup("c6i.large")
	if !ok {
		t.Fatal("c6i.large is not in the catalog")
	}
	got = ProfileForCPUFootprint("fp", base, []string{"avx512_vnni"}, NodeFactsFromCatalog(c6i, 0), "me-central-1", nil)
	if w := "benchmark \"cpu_int8_gemm\" {\n  min_efficiency = 0.5\n  backend = \"builtin-avx512-vnni\"\n}"; !strings.Contains(got, w) || strings.Contains(got, "amx") {
		t.Errorf("c6i: the profile lacks\n%s\nor names AMX:\n%s", w, got)
	}
	// The rendered block (no type known) takes the AVX-512 kernels too.
	r := footprintRendered(CPUFootprintSpec{Validation: &base, Requirements: CPURequirements{CPUFeatures: []string{"avx512_bf16", "avx512_vnni"}}})
	if r == nil || len(r.Benchmarks) != 2 || r.Benchmarks[0].Backend != "builtin-avx512-bf16" || r.Benchmarks[1].Backend != "builtin-avx512-vnni" {
		t.Errorf("rendered block: %+v", r)
	}
	// Every benchmark it adds is one hwprobe runs.
	for _, fb := range FootprintFeatureBenchmarks {
		if !slices.Contains(profile.BenchmarkNames(), fb.Benchmark) {
			t.Errorf("%s is not a hwprobe benchmark", fb.Benchmark)
		}
		for _, f := range fb.Features {
			if !slices.Contains(CPUFeatureNames(), f) {
				t.Errorf("%s is not a feature requirements.cpu_features accepts", f)
			}
		}
	}
}

// TestGuideC7iFootprintProfile keeps the guide's c7i footprint profile
// equal to what the provider renders.
func TestGuideC7iFootprintProfile(t *testing.T) {
	want := guideC7iFootprint(t)
	for _, p := range []string{"templates/guides/validation.md", "docs/guides/validation.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", p))
		if err != nil {
			t.Fatal(err)
		}
		const begin, end = "<!-- c7i-footprint-profile -->\n```hcl\n", "```\n<!-- /c7i-footprint-profile -->"
		s := string(b)
		i, j := strings.Index(s, begin), strings.Index(s, end)
		if i < 0 || j < i {
			t.Fatalf("%s: no c7i footprint profile between %q and %q", p, strings.TrimSpace(begin), end)
		}
		if got := s[i+len(begin) : j]; got != want {
			t.Errorf("%s: the c7i footprint profile differs from the render; put this there:\n%s", p, want)
		}
	}
	for _, w := range []string{`instance_type = "c7i.large"`, `"amx_tile"`, "min_threads = 2", `s3_uri = "s3://uae-hwprobe-reports/footprints/smb-inference/"`, `benchmark "cpu_sgemm"`} {
		if !strings.Contains(want, w) {
			t.Errorf("the c7i profile lacks %s:\n%s", w, want)
		}
	}
}

func TestFootprintValidationHook(t *testing.T) {
	for _, tt := range []struct {
		timeout time.Duration
		want    int32
	}{
		{0, 1200},                // the default 20m
		{5 * time.Minute, 300},   // the timeout is the heartbeat
		{3 * time.Hour, 7200},    // Auto Scaling's most (validationProblems refuses it)
		{time.Minute / 2, 30},    // never below Auto Scaling's least
		{90 * time.Minute, 5400}, // within
	} {
		h := FootprintValidationHook(ValidationSpec{Timeout: tt.timeout})
		if h.HeartbeatSecs != tt.want || h.Name != "mlplatform-validation" || h.Transition != "autoscaling:EC2_INSTANCE_LAUNCHING" || h.DefaultResult != "ABANDON" {
			t.Errorf("timeout %s: hook %+v, want heartbeat %d", tt.timeout, h, tt.want)
		}
	}
}

func TestFootprintValidationProblems(t *testing.T) {
	base := CPUFootprintSpec{Name: "fp", InstanceType: "c7i.large", Size: GroupSize{Min: 0, Max: 1, Desired: 1}}
	long := base
	long.Validation = &ValidationSpec{Timeout: 3 * time.Hour, ReportsS3URI: "s3://b/p/", ReportsKMSKeyARN: "arn:aws:kms:me-central-1:111122223333:key/k"}
	if ps := ValidateCPUFootprint(long, long.Unknown); !slices.ContainsFunc(ps, func(p Problem) bool {
		return p.Path == "validation.timeout" && strings.Contains(p.Detail, "heartbeat")
	}) {
		t.Errorf("a 3h timeout on a footprint: %+v, want the heartbeat bound", ps)
	}
	noReports := base
	noReports.Validation = &ValidationSpec{}
	if ps := ValidateCPUFootprint(noReports, noReports.Unknown); !slices.ContainsFunc(ps, func(p Problem) bool { return p.Path == "validation.reports_s3_uri" }) {
		t.Errorf("no reports location: %+v, want validation.reports_s3_uri", ps)
	}
	unknown := noReports
	unknown.Unknown = []string{"validation.reports_s3_uri", "validation.reports_kms_key_arn"}
	for _, p := range ValidateCPUFootprint(unknown, unknown.Unknown) {
		if strings.HasPrefix(p.Path, "validation.reports") {
			t.Errorf("a location known only at apply refused at plan: %+v", p)
		}
	}
}

// No node approves itself: the footprint's bootstrap publishes and answers
// challenges, and never completes its launch lifecycle action, whatever
// on_failure says.
func TestFootprintBootstrapNoSelfApproval(t *testing.T) {
	v := ValidationSpec{ReportsS3URI: "s3://b/p/"}
	for _, onFailure := range []string{"", OnFailureReplace, OnFailureWarn} {
		v.OnFailure = onFailure
		ud, err := FootprintBootstrap("me-central-1", "version = 1\n", "#!/bin/sh\necho mine\n", v, nil, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := ParseBootstrap(ud)
		if err != nil {
			t.Fatal(err)
		}
		if parts.UserData != "#!/bin/sh\necho mine\n" || !strings.Contains(parts.Script, "report publish") || !strings.Contains(parts.Script, "report serve") {
			t.Errorf("on_failure %q: script lacks publishing, serving or the user's part:\n%s", onFailure, parts.Script)
		}
		for _, self := range []string{"lifecycle", "CompleteLifecycleAction", "autoscaling"} {
			if strings.Contains(parts.Script, self) {
				t.Errorf("on_failure %q: the node's script mentions %q: a node must not complete its own launch action:\n%s", onFailure, self, parts.Script)
			}
		}
	}
}

func TestPlanCPUFootprintChangeValidation(t *testing.T) {
	v := &ValidationSpec{ReportsS3URI: "s3://b/p/", ReportsKMSKeyARN: "k"}
	spec := CPUFootprintSpec{Name: "fp", InstanceType: "c7i.large", Size: GroupSize{Max: 1, Desired: 1}}
	rec := CPUFootprintRecord{Spec: spec, GroupName: "g", LaunchTemplateID: "lt", Decision: CPUDecision{InstanceType: "c7i.large"}}
	plan := &CPUFootprintPlan{Decided: true, Decision: CPUDecision{InstanceType: "c7i.large"}}
	paths := func(cs []Change) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Path)
		}
		return out
	}
	with := spec
	with.Validation = v
	c := cpuFootprintChange(rec, with, plan)
	if !slices.Contains(paths(c.Roll), "validation") || !slices.Contains(paths(c.InPlace), "validation") {
		t.Errorf("adding validation: roll %v, in place %v; want both to name validation (new bootstrap, new hook)", paths(c.Roll), paths(c.InPlace))
	}
	rec.Spec = with
	longer := with
	lv := *v
	lv.Timeout, lv.OnFailure = 40*time.Minute, OnFailureReplace
	longer.Validation = &lv
	c = cpuFootprintChange(rec, longer, plan)
	if slices.Contains(paths(c.Roll), "validation") || !slices.Contains(paths(c.InPlace), "validation") {
		t.Errorf("a longer timeout: roll %v, in place %v; want only the hook changed in place", paths(c.Roll), paths(c.InPlace))
	}
	c = cpuFootprintChange(rec, spec, plan)
	if !slices.Contains(paths(c.InPlace), "validation") {
		t.Errorf("removing validation: in place %v, want the hook removed", paths(c.InPlace))
	}
}

// Requiring a feature that adds a benchmark to the profile rolls the
// instances, as a change of the validation block does; one that adds none
// does not.
func TestPlanCPUFootprintChangeFeatureBenchmarks(t *testing.T) {
	v := &ValidationSpec{ReportsS3URI: "s3://b/p/", ReportsKMSKeyARN: "k"}
	spec := CPUFootprintSpec{Name: "fp", InstanceType: "c7i.large", Size: GroupSize{Max: 1, Desired: 1}, Validation: v,
		Requirements: CPURequirements{CPUFeatures: []string{"amx_tile"}}}
	rec := CPUFootprintRecord{Spec: spec, GroupName: "g", LaunchTemplateID: "lt", Decision: CPUDecision{InstanceType: "c7i.large"}}
	plan := &CPUFootprintPlan{Decided: true, Decision: CPUDecision{InstanceType: "c7i.large"}}
	rolls := func(s CPUFootprintSpec) bool {
		return slices.ContainsFunc(cpuFootprintChange(rec, s, plan).Roll, func(c Change) bool { return c.Path == "validation" })
	}
	int8 := spec
	int8.Requirements.CPUFeatures = []string{"amx_tile", "amx_int8"}
	if !rolls(int8) {
		t.Error("requiring amx_int8 adds cpu_int8_gemm to the profile: want the instances to roll")
	}
	avx2 := spec
	avx2.Requirements.CPUFeatures = []string{"amx_tile", "avx2"}
	if rolls(avx2) {
		t.Error("requiring avx2 changes no benchmark: want no roll for validation")
	}
	declared := spec
	eff := 0.4
	declared.Validation = &ValidationSpec{ReportsS3URI: "s3://b/p/", ReportsKMSKeyARN: "k", Benchmarks: []BenchmarkThreshold{{Name: "cpu_int8_gemm", MinEfficiency: &eff}}}
	rec.Spec = declared
	declared.Requirements.CPUFeatures = []string{"amx_tile", "amx_int8"}
	if rolls(declared) {
		t.Error("cpu_int8_gemm declared already: requiring amx_int8 changes nothing; want no roll")
	}
}

// The "No trusted certificates" problem names only attributes that exist:
// the validation block's trusted_certificates (the provider has no
// certificates setting of its own).
func TestFootprintNoTrustedCertificatesNamesRealAttributes(t *testing.T) {
	spec := CPUFootprintSpec{Name: "fp", InstanceType: "c7i.large", Validation: &ValidationSpec{Wait: true}}
	var p CPUFootprintPlan
	if err := (&Env{}).planFootprintValidation(context.Background(), spec, &p); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(p.Problems, func(pr Problem) bool { return pr.Summary == "No trusted certificates" })
	if i < 0 {
		t.Fatalf("problems %+v, want No trusted certificates", p.Problems)
	}
	pr := p.Problems[i]
	// Attribute-like words: snake_case names, alone or in a dotted path.
	attrs := regexp.MustCompile(`[a-z0-9]+(?:\.[a-z0-9_]+)*_[a-z0-9_]+`).FindAllString(pr.Detail, -1)
	if len(attrs) == 0 {
		t.Fatalf("detail %q names no attribute, want the one to set", pr.Detail)
	}
	for _, a := range attrs {
		if a != "validation.trusted_certificates" {
			t.Errorf("detail %q names %q: not an attribute of the footprint or the provider", pr.Detail, a)
		}
	}
}
