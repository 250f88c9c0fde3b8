package lifecycle

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
)

// Test double of Auto Scaling: counts the completions, fails when told.
type fakeAPI struct {
	calls int
	err   error
}

func (f *fakeAPI) CompleteLifecycleAction(context.Context, *autoscaling.CompleteLifecycleActionInput, ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error) {
	f.calls++
	return &autoscaling.CompleteLifecycleActionOutput{}, f.err
}

func TestComplete(t *testing.T) {
	ok := Action{Hook: "h", Group: "g", InstanceID: "i-1", Result: Continue}
	for _, tt := range []struct {
		name    string
		a       Action
		apiErr  error
		wantErr bool
		calls   int
	}{
		{name: "continue", a: ok, calls: 1},
		{name: "abandon", a: Action{Hook: "h", Group: "g", InstanceID: "i-1", Result: Abandon}, calls: 1},
		{name: "no hook", a: Action{Group: "g", InstanceID: "i-1", Result: Continue}, wantErr: true},
		{name: "no instance", a: Action{Hook: "h", Group: "g", Result: Continue}, wantErr: true},
		{name: "bad result", a: Action{Hook: "h", Group: "g", InstanceID: "i-1", Result: "MAYBE"}, wantErr: true},
		{name: "refused", a: ok, apiErr: errors.New("ValidationError: No active Lifecycle Action"), wantErr: true, calls: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{err: tt.apiErr}
			err := Complete(context.Background(), f, tt.a)
			if (err != nil) != tt.wantErr || f.calls != tt.calls {
				t.Errorf("err %v, %d calls; want error %v, %d calls", err, f.calls, tt.wantErr, tt.calls)
			}
		})
	}
}

func TestResult(t *testing.T) {
	if r, err := ParseResult(" continue "); err != nil || r != Continue {
		t.Errorf("ParseResult(continue) = %q, %v", r, err)
	}
	if _, err := ParseResult("yes"); err == nil {
		t.Error("ParseResult(yes) accepted")
	}
	for _, tt := range []struct {
		exit         int
		onFail, want string
	}{{0, Abandon, Continue}, {1, Abandon, Abandon}, {2, Abandon, Abandon}, {1, Continue, Continue}} {
		if got := ResultFor(tt.exit, tt.onFail); got != tt.want {
			t.Errorf("ResultFor(%d, %s) = %s, want %s", tt.exit, tt.onFail, got, tt.want)
		}
	}
}
