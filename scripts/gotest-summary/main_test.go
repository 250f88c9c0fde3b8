package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const stream = `{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestA"}
{"Action":"output","Package":"a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"run","Package":"a","Test":"TestA/sub"}
{"Action":"output","Package":"a","Test":"TestA/sub","Output":"    a_test.go:9: boom\n"}
{"Action":"fail","Package":"a","Test":"TestA/sub","Elapsed":0.5}
{"Action":"fail","Package":"a","Test":"TestA","Elapsed":0.6}
{"Action":"pass","Package":"a","Test":"TestB","Elapsed":2}
{"Action":"skip","Package":"a","Test":"TestC","Elapsed":0}
{"Action":"output","Package":"a","Output":"FAIL\n"}
{"Action":"fail","Package":"a","Elapsed":3}
{"Action":"pass","Package":"b","Test":"TestD","Elapsed":1}
{"Action":"pass","Package":"b","Elapsed":1.5}
{"Action":"skip","Package":"c"}
`

func TestRun(t *testing.T) {
	var out bytes.Buffer
	err := run(strings.NewReader(stream), &out, []string{"-slowest", "2"})
	if !errors.Is(err, errFailed) {
		t.Errorf("run = %v, want errFailed", err)
	}
	got := out.String()
	for _, want := range []string{
		"FAIL    a 3.000s\n",
		"ok      b 1.500s (1 tests)\n",
		"?       c [no test files]\n",
		"--- FAIL: TestA/sub (a)\n    a_test.go:9: boom\n",
		"slowest tests:\n       2s  a TestB\n       1s  b TestD\n",
		"\n2 passed, 2 failed, 1 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "--- FAIL: TestA (a)") {
		t.Errorf("the parent of a failed subtest is shown too:\n%s", got)
	}
}

func TestRunPassAndEmpty(t *testing.T) {
	var out bytes.Buffer
	const events = `{"Action":"pass","Package":"b","Test":"TestD","Elapsed":1}
{"Action":"pass","Package":"b","Elapsed":1.5}
`
	kept := filepath.Join(t.TempDir(), "events.json")
	if err := run(strings.NewReader(events), &out, []string{"-json", kept}); err != nil {
		t.Errorf("a passing run: %v\n%s", err, out.String())
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != events {
		t.Errorf("-json kept %q (%v), want the events as read", b, err)
	}
	out.Reset()
	if err := run(strings.NewReader(`{"Action":"skip","Package":"c"}`+"\n"), &out, nil); !errors.Is(err, errFailed) {
		t.Errorf("a run of no test: %v, want errFailed", err)
	}
}

// A build error is no JSON event of a test: it is shown, and the package
// fails.
func TestRunBuildError(t *testing.T) {
	var out bytes.Buffer
	err := run(strings.NewReader("# a\na/x.go:1:1: syntax error\n"+`{"Action":"fail","Package":"a","Elapsed":0}`+"\n"), &out, nil)
	if !errors.Is(err, errFailed) || !strings.Contains(out.String(), "a/x.go:1:1: syntax error") {
		t.Errorf("run = %v\n%s", err, out.String())
	}
}
