//go:build hwprobe_nvmlmock && cgo

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The test build plays GPUs from HWPROBE_NVML_MOCK: healthy passes, a link
// down fails naming GPU and link, a bad spec cannot run.
func TestValidateWithNVMLMock(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "p.hcl")
	if err := os.WriteFile(prof, []byte(`
name = "p5en"
gpu {
  model            = "H200"
  count            = 8
  min_memory_gib   = 133
  min_nvlink_links = 18
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		spec     string
		code     int
		stdout   string
		stderrRE string
	}{
		{spec: "dgxh200", code: exitOK, stdout: "PASS: 49 passed", stderrRE: "mock server dgxh200, not real hardware"},
		{spec: "dgxh200;nvlink_down=3:17", code: exitFailed, stdout: "gpu3: 17 of 18 NVLink links active, profile needs 18; down: link 17"},
		{spec: "dgxh200;gpus=7", code: exitFailed, stdout: "found 7 GPUs, profile expects 8"},
		{spec: "dgxa100", code: exitFailed, stdout: "profile expects H200"},
		{spec: "dgxh200;nvlink_down=3", code: exitCannotRun, stderrRE: "HWPROBE_NVML_MOCK: nvlink_down"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			code, out, errb := runWithEnv(map[string]string{"HWPROBE_NVML_MOCK": tt.spec}, "validate", "--profile", prof, "--no-imds", "--format", "table")
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errb, tt.stderrRE) {
				t.Fatalf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errb)
			}
		})
	}
}
