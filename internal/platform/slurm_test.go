package platform

import (
	"slices"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/internal/residency"
)

const testSecret = "arn:aws:secretsmanager:me-central-1:123456789012:secret:munge-AbCdEf"

func TestSlurmValidate(t *testing.T) {
	good := SlurmSpec{Controllers: []string{"10.0.0.10:6817", "ctl-b"}, MungeKeySecretARN: testSecret, Partition: "gpu", Features: []string{"team-a"}}
	base := GPUClusterSpec{Name: "train", InstanceType: "p5en.48xlarge", NodeCount: 2, Image: "ami-0123456789abcdef0", Validation: &ValidationSpec{}}
	paths := func(s GPUClusterSpec) []string {
		var out []string
		for _, p := range ValidateGPUCluster(s, s.Unknown) {
			if strings.HasPrefix(p.Path, "orchestrator") {
				out = append(out, p.Path)
			}
		}
		return out
	}
	s := base
	s.Slurm = &good
	if got := paths(s); len(got) > 0 {
		t.Fatalf("a good block: %v", got)
	}
	for _, tc := range []struct {
		name string
		edit func(*SlurmSpec, *GPUClusterSpec)
		want []string
	}{
		{"no controller", func(x *SlurmSpec, _ *GPUClusterSpec) { x.Controllers = nil }, []string{"orchestrator.slurm.controllers"}},
		{"bad port", func(x *SlurmSpec, _ *GPUClusterSpec) { x.Controllers = []string{"ctl:70000"} }, []string{"orchestrator.slurm.controllers[0]"}},
		{"space in host", func(x *SlurmSpec, _ *GPUClusterSpec) { x.Controllers = []string{"ok", "bad host"} }, []string{"orchestrator.slurm.controllers[1]"}},
		{"not an ARN", func(x *SlurmSpec, _ *GPUClusterSpec) { x.MungeKeySecretARN = "munge" }, []string{"orchestrator.slurm.munge_key_secret_arn"}},
		{"partition", func(x *SlurmSpec, _ *GPUClusterSpec) { x.Partition = "gpu,cpu" }, []string{"orchestrator.slurm.partition"}},
		{"feature", func(x *SlurmSpec, _ *GPUClusterSpec) { x.Features = []string{"ok", "a b"} }, []string{"orchestrator.slurm.features[1]"}},
		{"prefix", func(x *SlurmSpec, _ *GPUClusterSpec) { x.NodeNamePrefix = strings.Repeat("p", 41) }, []string{"orchestrator.slurm.node_name_prefix"}},
		{"no validation", func(_ *SlurmSpec, c *GPUClusterSpec) { c.Validation = nil }, []string{"orchestrator.slurm"}},
		// Unknown values are checked at apply, never refused at plan.
		{"unknown controllers", func(x *SlurmSpec, c *GPUClusterSpec) {
			x.Controllers = nil
			c.Unknown = []string{"orchestrator.slurm.controllers"}
		}, nil},
		{"unknown block", func(x *SlurmSpec, c *GPUClusterSpec) {
			*x = SlurmSpec{}
			c.Unknown = []string{"orchestrator.slurm"}
		}, nil},
		{"unknown orchestrator", func(x *SlurmSpec, c *GPUClusterSpec) {
			*x = SlurmSpec{}
			c.Unknown = []string{"orchestrator"}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			x := good
			x.Controllers, x.Features = slices.Clone(good.Controllers), slices.Clone(good.Features)
			tc.edit(&x, &s)
			s.Slurm = &x
			if got := paths(s); !slices.Equal(got, tc.want) {
				t.Errorf("problems at %v, want %v", got, tc.want)
			}
		})
	}
	// The secret is a residency reference, required; unknown: none yet.
	if refs := good.residencyRefs(func(string) bool { return true }); len(refs) != 1 || refs[0].Kind != residency.KindSecret || !refs[0].Required || refs[0].Path != "orchestrator.slurm.munge_key_secret_arn" {
		t.Errorf("refs %+v", refs)
	}
	if refs := good.residencyRefs(func(p string) bool { return p != "orchestrator.slurm.munge_key_secret_arn" }); len(refs) != 0 {
		t.Errorf("unknown secret: refs %+v", refs)
	}
}

func TestSlurmNodeAndControllerConfig(t *testing.T) {
	s := &SlurmSpec{Controllers: []string{"10.0.0.10"}, MungeKeySecretARN: testSecret, Partition: "gpu", Features: []string{"team-a", "efa"}}
	prof := &profile.Profile{Host: &profile.Host{InstanceType: "p5en.48xlarge"}, CPU: &profile.CPU{MinMemoryGiB: 1843}, GPU: &profile.GPU{Model: "H200", Count: 8}}
	n := slurmNodeFromProfile(s, "Train A", "profile text", prof, 16, "mlplatform-Train A")
	if want := []string{"mlplatform", "Train-A", "p5en.48xlarge", "h200", "efa", "pg-mlplatform-Train-A", "profile-"}; len(n.Features) != 8 || !slices.Equal(n.Features[:6], want[:6]) || !strings.HasPrefix(n.Features[6], "profile-") || n.Features[7] != "team-a" {
		t.Errorf("features %v", n.Features)
	}
	if got, want := n.conf(), "Gres=gpu:h200:8 Feature="+strings.Join(n.Features, ",")+" RealMemory=1887232 State=DRAIN"; got != want {
		t.Errorf("conf %q, want %q", got, want)
	}
	j := slurmJoinConfig(s, "me-central-1", "Train A", true, n)
	if err := j.Validate(); err != nil || j.NodeName != slurm.NameByIndex || j.IndexTag != "mlplatform:node-indices" || j.NodeNamePrefix != "Train-A" {
		t.Errorf("join %+v: %v", j, err)
	}
	cfg := SlurmControllerConfig(s, "Train A", n, 64)
	for _, want := range []string{"SlurmctldParameters=enable_configless\n", "MaxNodeCount=64 ", "GresTypes=gpu\n",
		"HealthCheckProgram=/usr/local/sbin/hwprobe-slurm-health-check\n", "Nodeset=Train-A Feature=Train-A\n",
		"PartitionName=gpu Nodes=Train-A State=UP\n", "NodeName=Train-A-[0-63] Name=gpu Type=h200 File=/dev/nvidia[0-7]\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("controller config lacks %q:\n%s", want, cfg)
		}
	}
	// A CPU node: no gres, no GresTypes, named by instance.
	cpu := slurmNodeFromProfile(&SlurmSpec{Controllers: []string{"c"}, MungeKeySecretARN: testSecret}, "smb", "p", &profile.Profile{Host: &profile.Host{InstanceType: "c7i.2xlarge"}}, 0, "")
	if strings.Contains(cpu.conf(), "Gres") || strings.Contains(SlurmControllerConfig(&SlurmSpec{}, "smb", cpu, 100), "gres") {
		t.Errorf("CPU node: %q", cpu.conf())
	}
	if jc := slurmJoinConfig(&SlurmSpec{Controllers: []string{"c"}, MungeKeySecretARN: testSecret}, "me-central-1", "smb", false, cpu); jc.NodeName != slurm.NameByInstance || jc.IndexTag != "" {
		t.Errorf("footprint join %+v", jc)
	}
}

func TestBootstrapSlurmRoundTrip(t *testing.T) {
	j := slurm.JoinConfig{Controllers: []string{"10.0.0.10:6817"}, MungeKeySecretARN: testSecret, Region: "me-central-1",
		NodeNamePrefix: "train", NodeName: slurm.NameByIndex, IndexTag: "mlplatform:node-indices", Conf: "Gres=gpu:h200:8 Feature=mlplatform,train"}
	ud, err := Bootstrap(BootstrapInput{Profile: "version = 1\n", Region: "me-central-1", Slurm: &j})
	if err != nil {
		t.Fatal(err)
	}
	// The join configuration is plain text in the user data (the plan shows
	// it), and the script joins after it published the report.
	if !strings.Contains(ud, `\"munge_key_secret_arn\": \"`+testSecret+`\"`) {
		t.Errorf("join configuration not in plain text:\n%s", ud)
	}
	parts, err := ParseBootstrap(ud)
	if err != nil {
		t.Fatal(err)
	}
	if parts.Slurm == nil || parts.Slurm.Conf != j.Conf || parts.Slurm.NodeName != j.NodeName {
		t.Fatalf("round trip: %+v", parts.Slurm)
	}
	pub, join := strings.Index(parts.Script, "report publish"), strings.Index(parts.Script, "slurm join --config "+slurm.JoinConfigPath)
	if pub < 0 || join < pub {
		t.Errorf("the script joins before it publishes (publish at %d, join at %d)", pub, join)
	}
	bad := j
	bad.Conf = "Feature=$(reboot)"
	if _, err := Bootstrap(BootstrapInput{Profile: "version = 1\n", Region: "me-central-1", Slurm: &bad}); err == nil {
		t.Error("a join configuration with shell syntax was rendered")
	}
	plain, _ := Bootstrap(BootstrapInput{Profile: "version = 1\n", Region: "me-central-1"})
	if strings.Contains(plain, "slurm") {
		t.Error("a bootstrap without Slurm mentions it")
	}
}
