package platform_test

import (
	"os"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// guideBlock returns the first fenced block of lang after heading in the
// guide.
func guideBlock(t *testing.T, path, heading, lang string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s: no heading %q", path, heading)
	}
	text = text[i:]
	start := strings.Index(text, "```"+lang+"\n")
	if start < 0 {
		t.Fatalf("%s: no %s block after %q", path, lang, heading)
	}
	text = text[start+len("```"+lang+"\n"):]
	end := strings.Index(text, "```")
	if end < 0 {
		t.Fatalf("%s: unterminated block after %q", path, heading)
	}
	return text[:end]
}

// The p5en profile the validation guide shows is the one the provider
// renders for the guide's cluster: the catalog's facts, the 16 EFA
// interfaces it attaches, the block's benchmarks, the reports prefix.
func TestGuideP5enProfile(t *testing.T) {
	cat, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	it, ok := cat.Lookup("p5en.48xlarge")
	if !ok {
		t.Fatal("p5en.48xlarge not in the catalog")
	}
	spec := platform.GPUClusterSpec{Name: "train-a", InstanceType: "p5en.48xlarge", Validation: &platform.ValidationSpec{
		Wait: true, Benchmarks: []platform.BenchmarkThreshold{{Name: "gpu_gemm_bf16", MinEfficiency: f64(0.6)}, {Name: "gpu_nccl_allreduce_busbw", MinEfficiency: f64(0.6)}},
		ReportsS3URI: "s3://uae-hwprobe-reports/clusters/", ReportsKMSKeyARN: "arn:aws:kms:me-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
	}}
	got := platform.RenderProfile(platform.ProfileForGPUCluster(spec, platform.NodeFactsFromCatalog(it, 16), "me-central-1", []string{"mec1-az1", "mec1-az3"}))
	want := guideBlock(t, "../../templates/guides/validation.md", "## The profile a p5en cluster gets", "hcl")
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("docs/guides/validation.md shows another p5en profile than the render; the render:\n%s", got)
	}
}

// The bootstrap script the validation guide shows is the one the provider
// renders for a GPU node that fetches hwprobe from S3 (the checksum shown as
// a placeholder).
func TestGuideBootstrapScript(t *testing.T) {
	ud, err := platform.Bootstrap(platform.BootstrapInput{
		Profile: "version = 1\n", Region: "me-central-1", GPU: true,
		HwprobeS3URI: "s3://uae-artifacts/hwprobe/v0.1.0/hwprobe-linux-amd64", HwprobeSHA256: "<sha256>",
	})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := platform.ParseBootstrap(ud)
	if err != nil {
		t.Fatal(err)
	}
	want := guideBlock(t, "../../templates/guides/validation.md", "## The bootstrap", "sh")
	if strings.TrimSpace(parts.Script) != strings.TrimSpace(want) {
		t.Errorf("docs/guides/validation.md shows another bootstrap than the render; the render:\n%s", parts.Script)
	}
}
