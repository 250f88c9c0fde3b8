package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"

	"github.com/mlplatform/mlplatform/hwprobe/lifecycle"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
)

// Test double of Auto Scaling: records the completions.
type fakeLifecycle struct {
	got []autoscaling.CompleteLifecycleActionInput
}

func (f *fakeLifecycle) CompleteLifecycleAction(_ context.Context, in *autoscaling.CompleteLifecycleActionInput, _ ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error) {
	f.got = append(f.got, *in)
	return &autoscaling.CompleteLifecycleActionOutput{}, nil
}

// Test double of the metadata service: the instance id only.
type idIMDS struct{ probe.IMDS }

func (idIMDS) GetMetadata(_ context.Context, in *imds.GetMetadataInput, _ ...func(*imds.Options)) (*imds.GetMetadataOutput, error) {
	return &imds.GetMetadataOutput{Content: io.NopCloser(strings.NewReader("i-0abc\n"))}, nil
}

func TestLifecycleComplete(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pass := write("pass.json", `{"schema":"hwprobe.mlplatform.io/report/v1","validation":{"exit_code":0}}`)
	fail := write("fail.json", `{"schema":"hwprobe.mlplatform.io/report/v1","validation":{"exit_code":1}}`)
	notRun := write("none.json", `{"schema":"hwprobe.mlplatform.io/report/v1"}`)
	base := []string{"complete", "--region", "me-central-1", "--hook", "mlplatform-validation", "--group", "mlplatform-cpu-smb"}
	for _, tt := range []struct {
		name  string
		args  []string
		want  string // the result sent; "" for none
		code  int
		ident bool // instance id from IMDS
	}{
		{name: "pass continues", args: []string{"--report", pass}, want: lifecycle.Continue, ident: true},
		{name: "fail abandons", args: []string{"--report", fail}, want: lifecycle.Abandon, ident: true},
		{name: "no validation abandons", args: []string{"--report", notRun}, want: lifecycle.Abandon, ident: true},
		{name: "warn keeps a failing node", args: []string{"--report", fail, "--on-fail", "continue"}, want: lifecycle.Continue, ident: true},
		{name: "explicit result and id", args: []string{"--result", "abandon", "--instance-id", "i-0def"}, want: lifecycle.Abandon},
		{name: "no result", args: nil, code: exitCannotRun},
		{name: "bad result", args: []string{"--result", "maybe"}, code: exitCannotRun},
		{name: "both", args: []string{"--result", "continue", "--report", pass}, code: exitCannotRun},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLifecycle{}
			var out, errb bytes.Buffer
			a := newApp(&out, &errb, func(string) string { return "" })
			a.newIMDS = func() probe.IMDS { return idIMDS{} }
			a.newAutoScaling = func(context.Context, string) (lifecycle.API, error) { return f, nil }
			err := run(context.Background(), append([]string{"lifecycle"}, append(base, tt.args...)...), a)
			if code := exitStatus(err, &errb); code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errb.String())
			}
			if tt.want == "" {
				if len(f.got) != 0 {
					t.Fatalf("completed %v", f.got)
				}
				return
			}
			if len(f.got) != 1 {
				t.Fatalf("%d completions", len(f.got))
			}
			g := f.got[0]
			id := "i-0def"
			if tt.ident {
				id = "i-0abc"
			}
			if aws.ToString(g.LifecycleActionResult) != tt.want || aws.ToString(g.InstanceId) != id ||
				aws.ToString(g.AutoScalingGroupName) != "mlplatform-cpu-smb" || aws.ToString(g.LifecycleHookName) != "mlplatform-validation" {
				t.Errorf("completed %+v", g)
			}
		})
	}
}
