//go:build hwprobe_nvmlmock

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The test build plays a fixed machine from HWPROBE_MACHINE: a profile
// that demands AMX passes on Sapphire Rapids and fails on Zen 5 naming the
// feature, whatever CPU runs the test; an unknown name cannot run.
func TestValidateWithMachine(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "p.hcl")
	if err := os.WriteFile(prof, []byte(`
name = "c7i"
cpu {
  min_threads    = 2
  min_memory_gib = 3
  features       = ["avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"]
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		machine  string
		code     int
		stdout   string
		stderrRE string
	}{
		{machine: "sapphirerapids", code: exitOK, stdout: "PASS", stderrRE: "fixed machine description sapphirerapids"},
		{machine: "zen5", code: exitFailed, stdout: "amx_tile not available"},
		{machine: "pentium", code: exitCannotRun, stderrRE: `HWPROBE_MACHINE: unknown machine "pentium"`},
	} {
		t.Run(tt.machine, func(t *testing.T) {
			var out, errb bytes.Buffer
			env := map[string]string{"HWPROBE_MACHINE": tt.machine}
			a := newApp(&out, &errb, func(k string) string { return env[k] })
			err := run(context.Background(), []string{"validate", "--profile", prof, "--no-imds", "--no-gpu", "--format", "table"}, a)
			code := exitOK
			if err != nil {
				code = exitCannotRun
				if e, ok := asExit(err); ok {
					code = e.code
				}
				errb.WriteString(err.Error())
			}
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderrRE) {
				t.Fatalf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tt.code, out.String(), errb.String())
			}
		})
	}
}
