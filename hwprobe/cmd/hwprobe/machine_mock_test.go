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
			code, out, errb := runWithEnv(map[string]string{"HWPROBE_MACHINE": tt.machine}, "validate", "--profile", prof, "--no-imds", "--no-gpu", "--format", "table")
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errb, tt.stderrRE) {
				t.Fatalf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errb)
			}
		})
	}
}

// runWithEnv runs hwprobe with args and only the environment env, and
// returns its exit code, standard output and standard error (the error
// run returned included).
func runWithEnv(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	a := newApp(&out, &errb, func(k string) string { return env[k] })
	err := run(context.Background(), args, a)
	code = exitOK
	if err != nil {
		code = exitCannotRun
		if e, ok := asExit(err); ok {
			code = e.code
		}
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}
