package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The NVML mock backend and the test signer that stands in for the
// NitroTPM are test code: a release build of hwprobe must not contain
// them, and a build with the hwprobe_nvmlmock tag must (so the first check
// can fail).
func TestReleaseBuildHasNoNVMLMock(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the build's packages with the go command")
	}
	const (
		ours = "github.com/mlplatform/mlplatform/hwprobe/gpu/nvmlmock"
		mock = "github.com/NVIDIA/go-nvml/pkg/nvml/mock"
		// the test signer that stands in for the NitroTPM
		signer = "github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
	)
	deps := func(tags ...string) []string {
		args := append([]string{"list", "-deps"}, tags...)
		cmd := exec.Command("go", append(args, ".")...)
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(args, " "), err)
		}
		return strings.Fields(string(out))
	}
	mocked := func(pkgs []string) []string {
		var out []string
		for _, p := range pkgs {
			if p == ours || p == mock || p == signer || strings.HasPrefix(p, mock+"/") || strings.HasSuffix(p, "/gpu/gputest") {
				out = append(out, p)
			}
		}
		return out
	}
	if got := mocked(deps()); len(got) > 0 {
		t.Errorf("the release build of hwprobe contains test packages: %v", got)
	}
	tagged := deps("-tags", "hwprobe_nvmlmock")
	if !slices.Contains(tagged, ours) || !slices.Contains(tagged, mock) || !slices.Contains(tagged, signer) {
		t.Errorf("the hwprobe_nvmlmock build lacks %s, %s or %s", ours, mock, signer)
	}
	if nvmlMockBuild {
		t.Log("this test binary is a hwprobe_nvmlmock build")
	}
}
