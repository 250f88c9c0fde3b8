package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The NVML mock backend is test code: a release build of hwprobe must not
// contain it, and a build with the hwprobe_nvmlmock tag must (so the first
// check can fail).
func TestReleaseBuildHasNoNVMLMock(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the build's packages with the go command")
	}
	const (
		ours = "github.com/mlplatform/mlplatform/hwprobe/gpu/nvmlmock"
		mock = "github.com/NVIDIA/go-nvml/pkg/nvml/mock"
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
			if p == ours || p == mock || strings.HasPrefix(p, mock+"/") || strings.HasSuffix(p, "/gpu/gputest") {
				out = append(out, p)
			}
		}
		return out
	}
	if got := mocked(deps()); len(got) > 0 {
		t.Errorf("the release build of hwprobe contains test packages: %v", got)
	}
	tagged := deps("-tags", "hwprobe_nvmlmock")
	if !slices.Contains(tagged, ours) || !slices.Contains(tagged, mock) {
		t.Errorf("the hwprobe_nvmlmock build lacks %s or %s", ours, mock)
	}
	if nvmlMockBuild {
		t.Log("this test binary is a hwprobe_nvmlmock build")
	}
}
