package platform

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPollingFromEnv(t *testing.T) {
	tests := []struct {
		name     string
		value    string
		want     time.Duration // every kind's interval; 0: the AWS defaults
		wantErr  bool
		errNames string
	}{
		{name: "unset: AWS defaults", value: ""},
		{name: "blank: AWS defaults", value: "  "},
		{name: "200ms", value: "200ms", want: 200 * time.Millisecond},
		{name: "spaces around", value: " 1s ", want: time.Second},
		{name: "not a duration", value: "fast", wantErr: true},
		{name: "a number without unit", value: "200", wantErr: true},
		{name: "zero", value: "0s", wantErr: true},
		{name: "negative", value: "-1s", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PollingFromEnv(func(k string) string {
				if k == PollIntervalEnv {
					return tt.value
				}
				return ""
			})
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), PollIntervalEnv) || !strings.Contains(err.Error(), tt.value) {
					t.Fatalf("err = %v, want one naming %s and the value %q", err, PollIntervalEnv, tt.value)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultPolling()
			if tt.want > 0 {
				want = PollingEvery(tt.want)
			}
			for _, k := range []struct {
				name      string
				got, want Poll
			}{{"nodes", got.Nodes, want.Nodes}, {"sagemaker", got.SageMaker, want.SageMaker}, {"settle", got.Settle, want.Settle},
				{"autoscaling", got.AutoScaling, want.AutoScaling}, {"gate", got.Gate, want.Gate}} {
				if k.got.Interval != k.want.Interval || k.got.Max != k.want.Max {
					t.Errorf("%s polls every %s up to %s, want %s up to %s", k.name, k.got.Interval, k.got.Max, k.want.Interval, k.want.Max)
				}
			}
		})
	}
}

// sleepRecorder is a Sleep that records the waits asked for and sleeps
// none.
type sleepRecorder struct{ waits []time.Duration }

func (r *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	r.waits = append(r.waits, d)
	return ctx.Err()
}

// The validation gate looks at once, then at the environment's Gate
// interval (AWS's when the environment names none).
func TestGateUsesEnvPolling(t *testing.T) {
	tests := []struct {
		name      string
		polling   Polling
		wantWaits []time.Duration
	}{
		{name: "the environment's interval", polling: PollingEvery(3 * time.Millisecond), wantWaits: []time.Duration{3 * time.Millisecond, 3 * time.Millisecond}},
		{name: "none: AWS's", polling: Polling{}, wantWaits: []time.Duration{15 * time.Second, 15 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &sleepRecorder{}
			e := &Env{Polling: tt.polling.WithSleep(rec.sleep)}
			var waitsAtLook []int
			run := gateRun{Resource: "CPU footprint test", Spec: ValidationSpec{Timeout: time.Minute},
				// Nodes still launching at the first two looks: the gate
				// waits; at the third none is, and no node is expected.
				Nodes: func(context.Context) ([]ExpectedNode, int, error) {
					waitsAtLook = append(waitsAtLook, len(rec.waits))
					if len(waitsAtLook) < 3 {
						return nil, 1, nil
					}
					return nil, 0, nil
				},
			}
			res, err := e.gateLoop(context.Background(), run, &Gate{}, func(context.Context, []ExpectedNode) ([]ReportObject, error) { return nil, nil })
			if err != nil || res.Action != GatePass {
				t.Fatalf("gate = %s, %v; want pass", res.Action, err)
			}
			if !slices.Equal(waitsAtLook, []int{0, 1, 2}) {
				t.Errorf("looks after %v waits, want [0 1 2] (the first at once)", waitsAtLook)
			}
			if !slices.Equal(rec.waits, tt.wantWaits) {
				t.Errorf("waits %v, want %v", rec.waits, tt.wantWaits)
			}
		})
	}
}

// A SageMaker wait (a serving endpoint's create) polls at the
// environment's interval, whatever the caller's WaitOptions.
func TestSageMakerWaitUsesEnvPolling(t *testing.T) {
	tests := []struct {
		name      string
		polling   Polling
		wantWaits []time.Duration
	}{
		{name: "the environment's interval", polling: PollingEvery(7 * time.Millisecond), wantWaits: []time.Duration{7 * time.Millisecond, 7 * time.Millisecond}},
		{name: "none: AWS's, growing", polling: Polling{}, wantWaits: []time.Duration{2 * time.Second, 4 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &sleepRecorder{}
			e := &Env{Polling: tt.polling.WithSleep(rec.sleep)}
			f := newFakeServing()
			f.statuses = []string{"Creating", "Creating", "InService"}
			ep, err := createServing(context.Background(), f, nil, servingSpec(), nil, "tok", e.withPolling(ServingWait{Timeout: 5 * time.Second}))
			if err != nil || ep.Status != "InService" {
				t.Fatalf("create = %+v, %v", ep, err)
			}
			if !slices.Equal(rec.waits, tt.wantWaits) {
				t.Errorf("waits %v, want %v", rec.waits, tt.wantWaits)
			}
		})
	}
}

// Open carries the configuration's polling into the environment, kinds
// left zero taking AWS's.
func TestOpenCarriesPolling(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv(CatalogCacheEnv, "off")
	tests := []struct {
		name               string
		polling            Polling
		wantGate, wantNode time.Duration
	}{
		{name: "every 200ms", polling: PollingEvery(200 * time.Millisecond), wantGate: 200 * time.Millisecond, wantNode: 200 * time.Millisecond},
		{name: "none: AWS's", wantGate: 15 * time.Second, wantNode: 15 * time.Second},
		{name: "one kind set", polling: Polling{Gate: Poll{Interval: time.Second}}, wantGate: time.Second, wantNode: 15 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Open(context.Background(), Config{Region: "me-central-1", Polling: tt.polling})
			if err != nil {
				t.Fatal(err)
			}
			if env.Polling.Gate.Interval != tt.wantGate || env.Polling.Nodes.Interval != tt.wantNode {
				t.Errorf("gate every %s, nodes every %s; want %s, %s", env.Polling.Gate.Interval, env.Polling.Nodes.Interval, tt.wantGate, tt.wantNode)
			}
		})
	}
}
