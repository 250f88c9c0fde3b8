package platform_test

import (
	"cmp"
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

func f64(x float64) *float64 { return &x }
func intp(x int) *int        { return &x }

func TestValidationSpecValidate(t *testing.T) {
	ok := platform.ValidationSpec{ReportsS3URI: "s3://reports/gate/", ReportsKMSKeyARN: "arn:aws:kms:me-central-1:111122223333:key/k"}
	with := func(f func(*platform.ValidationSpec)) platform.ValidationSpec { v := ok; f(&v); return v }
	tests := []struct {
		name  string
		v     platform.ValidationSpec
		known func(string) bool
		want  []string // paths
	}{
		{"defaults", ok, nil, nil},
		{"on_failure", with(func(v *platform.ValidationSpec) { v.OnFailure = "retry" }), nil, []string{"validation.on_failure"}},
		{"level", with(func(v *platform.ValidationSpec) { v.Level = "deep" }), nil, []string{"validation.level"}},
		{"timeout", with(func(v *platform.ValidationSpec) { v.Timeout = 10 * time.Second }), nil, []string{"validation.timeout"}},
		{"max_replacements", with(func(v *platform.ValidationSpec) { v.MaxReplacements = intp(-1) }), nil, []string{"validation.max_replacements"}},
		{"checks", with(func(v *platform.ValidationSpec) { v.Checks = []string{"host", "disk", "host"} }), nil, []string{"validation.checks[1]", "validation.checks[2]"}},
		{"benchmark name and threshold", with(func(v *platform.ValidationSpec) {
			v.Benchmarks = []platform.BenchmarkThreshold{{Name: "gpu_gemm_bf17", MinEfficiency: f64(0.6)}, {Name: "cpu_sgemm"}, {Name: "cpu_stream_triad", MinEfficiency: f64(60)}, {Name: "cpu_stream_triad", Min: f64(2), Max: f64(1)}}
		}), nil, []string{"validation.benchmarks[0].name", "validation.benchmarks[1]", "validation.benchmarks[2].min_efficiency", "validation.benchmarks[3].name", "validation.benchmarks[3].max"}},
		{"reports missing", with(func(v *platform.ValidationSpec) { v.ReportsS3URI, v.ReportsKMSKeyARN = "", "" }), nil, []string{"validation.reports_s3_uri", "validation.reports_kms_key_arn"}},
		{"reports unknown", with(func(v *platform.ValidationSpec) { v.ReportsS3URI = "" }), func(p string) bool { return p != "validation.reports_s3_uri" }, nil},
		{"reports not s3", with(func(v *platform.ValidationSpec) { v.ReportsS3URI = "https://x" }), nil, []string{"validation.reports_s3_uri"}},
		{"hwprobe without checksum", with(func(v *platform.ValidationSpec) { v.HwprobeS3URI = "s3://artifacts/hwprobe" }), nil, []string{"validation.hwprobe_sha256"}},
		{"checksum without hwprobe", with(func(v *platform.ValidationSpec) { v.HwprobeSHA256 = strings.Repeat("a", 64) }), nil, []string{"validation.hwprobe_sha256"}},
		{"hwprobe with checksum", with(func(v *platform.ValidationSpec) {
			v.HwprobeS3URI, v.HwprobeSHA256 = "s3://artifacts/hwprobe", strings.Repeat("0f", 32)
		}), nil, nil},
		{"bad certificates", with(func(v *platform.ValidationSpec) { v.TrustedCertificates = "not pem" }), nil, []string{"validation.trusted_certificates"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range tt.v.Validate("validation", tt.known) {
				got = append(got, p.Path)
				if p.Detail == "" || p.Summary == "" {
					t.Errorf("problem without words: %+v", p)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("paths = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseValidationTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"20m": 20 * time.Minute, " 1h30m ": 90 * time.Minute, "60s": time.Minute} {
		if got, err := platform.ParseValidationTimeout(in); err != nil || got != want {
			t.Errorf("%q = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "20", "abc", "30s", "7h", "-5m"} {
		if _, err := platform.ParseValidationTimeout(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func FuzzParseValidationTimeout(f *testing.F) {
	for _, s := range []string{"20m", "1h", "", "x", "1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := platform.ParseValidationTimeout(s)
		if err == nil && (d < time.Minute || d > platform.MaxValidationTimeout) {
			t.Fatalf("%q = %v out of range", s, d)
		}
	})
}

func p5enFacts(t *testing.T) platform.NodeFacts {
	t.Helper()
	c, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	it, ok := c.Lookup("p5en.48xlarge")
	if !ok {
		t.Fatal("p5en.48xlarge not in the catalog")
	}
	return platform.NodeFactsFromCatalog(it, 16)
}

func TestProfileForGPUCluster(t *testing.T) {
	facts := p5enFacts(t)
	spec := platform.GPUClusterSpec{Name: "train-a", InstanceType: "p5en.48xlarge", Validation: &platform.ValidationSpec{
		ReportsS3URI: "s3://uae-reports/hwprobe", ReportsKMSKeyARN: "arn:aws:kms:me-central-1:111122223333:key/k",
		Benchmarks: []platform.BenchmarkThreshold{{Name: "gpu_gemm_bf16", MinEfficiency: f64(0.6)}},
	}}
	p := platform.ProfileForGPUCluster(spec, facts, "me-central-1", []string{"mec1-az3", "mec1-az1"})
	text := platform.RenderProfile(p)
	back, diags := profile.Load("profile.hcl", []byte(text))
	if diags.HasErrors() {
		t.Fatalf("rendered profile does not load: %v\n%s", diags, text)
	}
	g := back.GPU
	if g == nil || g.Model != "H200" || g.Count != 8 || g.MinNVLinkLinks != 18 || g.MinMemoryGiB != 133 {
		t.Errorf("gpu = %+v\n%s", g, text)
	}
	if back.EFA == nil || back.EFA.Count != 16 {
		t.Errorf("efa = %+v", back.EFA)
	}
	if c := back.CPU; c == nil || c.MinThreads != 192 || c.MinMemoryGiB != 1843 || !strings.Contains(strings.Join(c.Features, ","), "amx_tile") {
		t.Errorf("cpu = %+v", c)
	}
	if h := back.Host; h == nil || h.Region != "me-central-1" || strings.Join(h.ZoneIDs, ",") != "mec1-az1,mec1-az3" || h.InstanceType != "p5en.48xlarge" {
		t.Errorf("host = %+v", h)
	}
	if back.Report == nil || back.Report.S3URI != "s3://uae-reports/hwprobe/train-a/" {
		t.Errorf("report = %+v", back.Report)
	}
	if len(back.Benchmarks) != 1 || back.Benchmarks[0].Name != "gpu_gemm_bf16" || *back.Benchmarks[0].MinEfficiency != 0.6 {
		t.Errorf("benchmarks = %+v", back.Benchmarks)
	}

	// Sections left out; the full level adds the standard benchmarks.
	spec.Validation.Checks = []string{"host", "cpu_features"}
	spec.Validation.Level = "full"
	p = platform.ProfileForGPUCluster(spec, facts, "me-central-1", []string{"mec1-az1"})
	if p.GPU != nil || p.EFA != nil || p.CPU == nil || p.CPU.MinThreads != 0 || len(p.CPU.Features) == 0 {
		t.Errorf("checks not honoured: %s", platform.RenderProfile(p))
	}
	var names []string
	for _, b := range p.Benchmarks {
		names = append(names, b.Name)
	}
	if got := strings.Join(names, ","); got != "gpu_gemm_bf16,cpu_sgemm,cpu_stream_triad,gpu_hbm_d2d,gpu_nccl_allreduce_busbw" {
		t.Errorf("full benchmarks = %s", got)
	}
}

func TestBootstrap(t *testing.T) {
	text := platform.RenderProfile(&profile.Profile{Name: "x", Host: &profile.Host{Region: "me-central-1"}})
	tests := []struct {
		name    string
		in      platform.BootstrapInput
		want    []string // in the script
		wantErr string
	}{
		{"image hwprobe", platform.BootstrapInput{Profile: text, Region: "me-central-1", GPU: true},
			[]string{"hwprobe=/usr/local/bin/hwprobe", `validate --profile "$profile" --format table --report "$report"` + "\n", `report publish --profile "$profile" --report "$report"`}, ""},
		{"fetched hwprobe, cpu", platform.BootstrapInput{Profile: text, Region: "me-central-1", UserData: "#!/bin/bash\necho mine\n",
			HwprobeS3URI: "s3://artifacts/hwprobe", HwprobeSHA256: strings.Repeat("ab", 32)},
			[]string{"aws s3 cp --only-show-errors --region 'me-central-1' 's3://artifacts/hwprobe'", "sha256sum -c", strings.Repeat("ab", 32), "--no-gpu"}, ""},
		{"cloud-config user data", platform.BootstrapInput{Profile: text, Region: "me-central-1", UserData: "#cloud-config\npackages: [htop]\n"}, nil, ""},
		{"unknown user data", platform.BootstrapInput{Profile: text, Region: "me-central-1", UserData: "echo hi"}, nil, "must begin with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ud, err := platform.Bootstrap(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			parts, err := platform.ParseBootstrap(ud)
			if err != nil {
				t.Fatalf("%v\n%s", err, ud)
			}
			if parts.Profile != text || parts.UserData != tt.in.UserData {
				t.Errorf("parts = %+v", parts)
			}
			for _, w := range tt.want {
				if !strings.Contains(parts.Script, w) {
					t.Errorf("script lacks %q:\n%s", w, parts.Script)
				}
			}
			if !strings.HasPrefix(ud, "Content-Type: multipart/mixed") || len(ud) > 16*1024 {
				t.Errorf("user data header or size: %d bytes", len(ud))
			}
		})
	}
}

func FuzzParseBootstrap(f *testing.F) {
	ud, _ := platform.Bootstrap(platform.BootstrapInput{Profile: "name = \"x\"\n", Region: "me-central-1", UserData: "#!/bin/sh\n"})
	f.Add(ud)
	f.Add("Content-Type: multipart/mixed; boundary=x\n\n--x\r\n\r\n--x--")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := platform.ParseBootstrap(s)
		if err == nil && (p.Profile == "" || p.Script == "") {
			t.Fatal("accepted user data without a bootstrap")
		}
	})
}

func FuzzParseReport(f *testing.F) {
	f.Add([]byte(`{"schema":"hwprobe.mlplatform.io/report/v1","inventory":null}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := platform.ParseReport(b)
		if err == nil && r.Schema == "" {
			t.Fatal("accepted a report without a schema")
		}
	})
}

// gateFixture builds signed reports for the gate's tests.
type gateFixture struct {
	t       *testing.T
	signer  *acctest.NodeSigner
	profile string
	launch  time.Time
	// generated is the reports' generated_at (zero: 3 minutes after
	// launch).
	generated time.Time
	// challenge, when set, is the challenge the reports answer (hex).
	challenge string
}

type check struct {
	ID       string `json:"id"`
	Subject  string `json:"subject,omitempty"`
	Status   string `json:"status"`
	Expected string `json:"expected,omitempty"`
	Observed string `json:"observed,omitempty"`
	Optional bool   `json:"optional,omitempty"`
}

// report is a report of instance (its identity document says docInstance,
// zone az) with checks.
// at is a report of instance generated (and stored) at gen, whose identity
// document says the instance launched at pending.
func (f *gateFixture) at(instance string, gen, pending time.Time, sign *acctest.NodeSigner, checks ...check) platform.ReportObject {
	f.t.Helper()
	g := *f
	g.launch, g.generated = pending, gen
	return platform.ReportObject{Key: instance + "/" + gen.UTC().Format(platform.ReportKeyTime) + ".json", LastModified: gen,
		Body: g.report(instance, "123456789012", "me-central-1a", sign, checks...)}
}

func (f *gateFixture) report(docInstance, account, az string, sign *acctest.NodeSigner, checks ...check) []byte {
	f.t.Helper()
	doc := acctest.IdentityDocument{AccountID: account, AvailabilityZone: az, InstanceID: docInstance, InstanceType: "p5en.48xlarge", Region: "me-central-1", PendingTime: f.launch.UTC().Format(time.RFC3339)}.JSON()
	sig, err := sign.Sign(doc)
	if err != nil {
		f.t.Fatal(err)
	}
	pass, fail, exit := 0, 0, 0
	for _, c := range checks {
		if c.Status == "pass" {
			pass++
		} else {
			fail++
			exit = 1
		}
	}
	r := map[string]any{
		"schema":       "hwprobe.mlplatform.io/report/v1",
		"generated_at": cmp.Or(f.generated, f.launch.Add(3*time.Minute)),
		"profile":      map[string]any{"name": "train-a", "sha256": platform.ProfileSHA256(f.profile)},
		"validation":   map[string]any{"checks": checks, "summary": map[string]int{"pass": pass, "fail": fail}, "exit_code": exit},
		"inventory":    map[string]any{},
		"identity":     map[string]any{"document": string(doc), "rsa2048": sig},
	}
	if f.challenge != "" {
		r["challenge"] = f.challenge
	}
	b, err := json.Marshal(r)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func TestGateDecide(t *testing.T) {
	signer, err := acctest.NewNodeSigner()
	if err != nil {
		t.Fatal(err)
	}
	other, err := acctest.NewNodeSigner()
	if err != nil {
		t.Fatal(err)
	}
	policy, err := residency.NewPolicy(residency.PolicyConfig{Jurisdiction: "AE", ExcludedZoneIDs: []string{"mec1-az2"}})
	if err != nil {
		t.Fatal(err)
	}
	launch := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	f := &gateFixture{t: t, signer: signer, profile: "name = \"train-a\"\n", launch: launch}
	const acct = "123456789012"
	nodes := []platform.ExpectedNode{
		{Index: 0, InstanceID: "i-00000000000000000", Zone: "me-central-1a", ZoneID: "mec1-az1", LaunchTime: launch},
		{Index: 1, InstanceID: "i-11111111111111111", Zone: "me-central-1a", ZoneID: "mec1-az1", LaunchTime: launch},
	}
	passing := check{ID: "gpu.count", Status: "pass", Expected: "8", Observed: "8"}
	nvlink := check{ID: "gpu.nvlink", Subject: "gpu3", Status: "fail", Expected: ">= 18", Observed: "17"}
	good := func(i int) platform.ReportObject {
		return platform.ReportObject{Key: nodes[i].InstanceID + "/20261123T060300Z.json", Body: f.report(nodes[i].InstanceID, acct, "me-central-1a", signer, passing)}
	}
	obj := func(i int, body []byte) platform.ReportObject {
		return platform.ReportObject{Key: nodes[i].InstanceID + "/20261123T060300Z.json", Body: body}
	}
	withKey := func(o platform.ReportObject, key string) platform.ReportObject { o.Key = key; return o }
	storedAt := func(o platform.ReportObject, t time.Time) platform.ReportObject { o.LastModified = t; return o }
	deadline := launch.Add(20 * time.Minute)
	before := launch.Add(5 * time.Minute)

	tests := []struct {
		name       string
		onFailure  string
		reports    []platform.ReportObject
		now        time.Time
		action     string
		statuses   string
		progress   string
		replace    []int
		detailWant string
	}{
		{name: "all pass", reports: []platform.ReportObject{good(0), good(1)}, now: before, action: platform.GatePass, statuses: "pass,pass", progress: "2/2 nodes reported"},
		{name: "one missing, waiting", reports: []platform.ReportObject{good(0)}, now: before, action: platform.GateWait, statuses: "pass,missing", progress: "1/2 nodes reported"},
		{name: "one missing, deadline", reports: []platform.ReportObject{good(0)}, now: deadline, action: platform.GateTimeout, statuses: "pass,missing", detailWant: "node 1 (i-11111111111111111) never reported"},
		{name: "nvlink fails", reports: []platform.ReportObject{good(0), obj(1, f.report(nodes[1].InstanceID, acct, "me-central-1a", signer, passing, nvlink))}, now: before,
			action: platform.GateFail, statuses: "pass,fail", progress: "2/2 nodes reported, 1 failing: node 1 gpu.nvlink gpu3: expected >= 18, observed 17", detailWant: "gpu.nvlink gpu3: expected >= 18, observed 17"},
		{name: "warn", onFailure: "warn", reports: []platform.ReportObject{good(0), obj(1, f.report(nodes[1].InstanceID, acct, "me-central-1a", signer, nvlink))}, now: before, action: platform.GateWarn, statuses: "pass,fail"},
		{name: "replace", onFailure: "replace", reports: []platform.ReportObject{good(0), obj(1, f.report(nodes[1].InstanceID, acct, "me-central-1a", signer, nvlink))}, now: before, action: platform.GateReplace, statuses: "pass,fail", replace: []int{1}},
		{name: "forged: identity of another instance", reports: []platform.ReportObject{good(0), obj(1, f.report(nodes[0].InstanceID, acct, "me-central-1a", signer, passing))}, now: before,
			action: platform.GateFail, statuses: "pass,rejected", detailWant: "identity of instance i-00000000000000000, not of node 1 (i-11111111111111111)"},
		{name: "forged: untrusted signer", reports: []platform.ReportObject{good(0), obj(1, f.report(nodes[1].InstanceID, acct, "me-central-1a", other, passing))}, now: before,
			action: platform.GateFail, statuses: "pass,rejected", detailWant: "does not verify"},
		{name: "another account", reports: []platform.ReportObject{good(0), obj(1, f.report(nodes[1].InstanceID, "999999999999", "me-central-1a", signer, passing))}, now: before,
			action: platform.GateFail, statuses: "pass,rejected", detailWant: "account 999999999999"},
		{name: "another zone", reports: []platform.ReportObject{good(0), obj(1, f.report(nodes[1].InstanceID, acct, "me-central-1c", signer, passing))}, now: before,
			action: platform.GateFail, statuses: "pass,rejected", detailWant: "zone me-central-1c"},
		{name: "a genuine report wins over a forgery", reports: []platform.ReportObject{good(0), good(1), obj(1, f.report(nodes[0].InstanceID, acct, "me-central-1a", signer, passing))}, now: before,
			action: platform.GatePass, statuses: "pass,pass"},
		{name: "stale report ignored", reports: []platform.ReportObject{good(0), {Key: nodes[1].InstanceID + "/20261123T060300Z.json", Body: []byte(strings.Replace(string(good(1).Body), platform.ProfileSHA256(f.profile), "0000", 1))}}, now: before,
			action: platform.GateWait, statuses: "pass,missing"},
		{name: "garbage rejected", reports: []platform.ReportObject{good(0), obj(1, []byte("{"))}, now: before, action: platform.GateFail, statuses: "pass,rejected"},
		// The writer chooses the key: a later key does not make a report
		// newer, and a key must name the report's generated_at.
		{name: "forged: a later key", reports: []platform.ReportObject{good(0), withKey(obj(1, f.report(nodes[1].InstanceID, acct, "me-central-1a", signer, passing)), nodes[1].InstanceID+"/99991231T235959Z.json")}, now: before,
			action: platform.GateFail, statuses: "pass,rejected", detailWant: "the key does not name the report's generated_at 2026-11-23T06:03:00Z"},
		// Newest is what the store recorded: the failing report stored
		// last wins over a passing one stored before it, whose key (and
		// generated_at) is later.
		{name: "newest by store time", reports: []platform.ReportObject{good(0), f.at(nodes[1].InstanceID, launch.Add(8*time.Minute), launch, signer, passing),
			storedAt(f.at(nodes[1].InstanceID, launch.Add(7*time.Minute), launch, signer, passing, nvlink), launch.Add(11*time.Minute))}, now: before,
			action: platform.GateFail, statuses: "pass,fail", detailWant: "gpu.nvlink gpu3"},
		// generated_at edited to pass for new: the store's time says
		// otherwise.
		{name: "forged: generated_at far from the store's time", reports: []platform.ReportObject{good(0), storedAt(good(1), launch.Add(2*time.Hour))}, now: before,
			action: platform.GateFail, statuses: "pass,rejected", detailWant: "stored at 2026-11-23T08:00:00Z but says it was generated at 2026-11-23T06:03:00Z"},
		// A report of the node written before it launched (by its signed
		// pendingTime).
		{name: "written before the launch", reports: []platform.ReportObject{good(0), f.at(nodes[1].InstanceID, launch.Add(-time.Hour), launch, signer, passing)}, now: before,
			action: platform.GateFail, statuses: "pass,rejected", detailWant: "written before the node launched (its signed pendingTime is 2026-11-23T06:00:00Z)"},
		// An identity document of an earlier launch of the instance (it
		// was stopped and started since).
		{name: "an earlier launch's identity", reports: []platform.ReportObject{good(0), f.at(nodes[1].InstanceID, launch.Add(3*time.Minute), launch.Add(-48*time.Hour), signer, passing)}, now: before,
			action: platform.GateFail, statuses: "pass,rejected", detailWant: "identity of an earlier launch of the instance (pendingTime 2026-11-21T06:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &platform.Gate{Spec: platform.ValidationSpec{OnFailure: tt.onFailure}.WithDefaults(), ProfileSHA256: platform.ProfileSHA256(f.profile),
				Trusted: []*x509.Certificate{signer.Cert}, Region: "me-central-1", AccountID: acct,
				ZoneIDs: map[string]string{"me-central-1a": "mec1-az1", "me-central-1b": "mec1-az2", "me-central-1c": "mec1-az3"}, Policy: policy}
			res := g.Decide(nodes, tt.reports, tt.now, deadline)
			var st []string
			for _, n := range res.Nodes {
				st = append(st, n.Status)
			}
			if res.Action != tt.action || strings.Join(st, ",") != tt.statuses {
				t.Fatalf("action %s statuses %v, want %s %s (%s)", res.Action, st, tt.action, tt.statuses, res.Progress)
			}
			if tt.progress != "" && res.Progress != tt.progress {
				t.Errorf("progress = %q, want %q", res.Progress, tt.progress)
			}
			if len(tt.replace) > 0 && (len(res.Replace) != 1 || res.Replace[0] != tt.replace[0]) {
				t.Errorf("replace = %v, want %v", res.Replace, tt.replace)
			}
			if tt.detailWant != "" {
				msg := (&platform.GateError{Resource: "GPU cluster train-a", Result: res, Timeout: 20 * time.Minute}).Error()
				if !strings.Contains(msg, tt.detailWant) {
					t.Errorf("error lacks %q:\n%s", tt.detailWant, msg)
				}
			}
			if res.Action == platform.GatePass {
				if n := res.Nodes[1]; n.AttestedZoneID != "mec1-az1" || n.AttestedRegion != "me-central-1" || n.Passed != 1 {
					t.Errorf("verdict = %+v", n)
				}
			}
		})
	}

	// A node attested in a zone the policy excludes fails, whatever its
	// checks say.
	outside := []platform.ExpectedNode{{Index: 0, InstanceID: "i-22222222222222222", Zone: "me-central-1b", ZoneID: "mec1-az2", LaunchTime: launch}}
	g := &platform.Gate{Spec: platform.ValidationSpec{}.WithDefaults(), ProfileSHA256: platform.ProfileSHA256(f.profile), Trusted: []*x509.Certificate{signer.Cert}, Region: "me-central-1", AccountID: acct,
		ZoneIDs: map[string]string{"me-central-1b": "mec1-az2"}, Policy: policy}
	res := g.Decide(outside, []platform.ReportObject{{Key: "i-22222222222222222/20261123T060300Z.json", Body: f.report("i-22222222222222222", acct, "me-central-1b", signer, passing)}}, before, deadline)
	if res.Action != platform.GateFail || !strings.Contains(res.Nodes[0].Summary, "outside the jurisdiction") {
		t.Errorf("outside: %s %+v", res.Action, res.Nodes[0])
	}
	// No trusted certificates: nothing verifies, so nothing passes.
	g.Trusted = nil
	res = g.Decide(nodes[:1], []platform.ReportObject{good(0)}, before, deadline)
	if res.Action != platform.GateFail || !strings.Contains(res.Nodes[0].Summary, "no trusted certificates") {
		t.Errorf("untrusted: %s %+v", res.Action, res.Nodes[0])
	}
}

// TestGateErrorKeepsConsoleOut: a silent node's console output (which may
// hold anything the node printed) stays out of the error, which CI logs
// keep; the error says where to read it.
func TestGateErrorKeepsConsoleOut(t *testing.T) {
	res := platform.GateResult{Action: platform.GateTimeout, Progress: "0/1 nodes reported",
		Nodes: []platform.NodeVerdict{{Index: 0, InstanceID: "i-0", Status: platform.NodeMissing}}}
	msg := (&platform.GateError{Resource: "GPU cluster a", Result: res, Timeout: time.Minute, Console: map[string]string{"i-0": "export TOKEN=s3cr3t"}}).Error()
	if strings.Contains(msg, "s3cr3t") || !strings.Contains(msg, "aws ec2 get-console-output --instance-id i-0 --latest") {
		t.Errorf("error:\n%s", msg)
	}
}
