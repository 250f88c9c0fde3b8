package cloud

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// recorder is a Sleep that records the waits asked for and sleeps none.
type recorder struct{ waits []time.Duration }

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.waits = append(r.waits, d)
	return ctx.Err()
}

func TestPollUntil(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name      string
		poll      Poll
		doneAt    int // the look that says done (1: the first)
		wantWaits []time.Duration
	}{
		{name: "done at the first look: no wait", poll: Poll{Interval: 10 * ms}, doneAt: 1, wantWaits: nil},
		{name: "fixed interval", poll: Poll{Interval: 10 * ms}, doneAt: 4, wantWaits: []time.Duration{10 * ms, 10 * ms, 10 * ms}},
		{name: "Max below Interval: fixed", poll: Poll{Interval: 10 * ms, Max: 5 * ms}, doneAt: 3, wantWaits: []time.Duration{10 * ms, 10 * ms}},
		{name: "doubling", poll: Poll{Interval: 10 * ms, Max: 80 * ms}, doneAt: 4, wantWaits: []time.Duration{10 * ms, 20 * ms, 40 * ms}},
		{name: "doubling up to the cap", poll: Poll{Interval: 10 * ms, Max: 30 * ms}, doneAt: 5, wantWaits: []time.Duration{10 * ms, 20 * ms, 30 * ms, 30 * ms}},
		{name: "the AWS SageMaker default", poll: DefaultPolling().SageMaker, doneAt: 7,
			wantWaits: []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			p := tt.poll
			p.Sleep = rec.sleep
			looks := 0
			var waitsAtLook []int // how many waits had passed at each look
			err := p.Until(context.Background(), func(context.Context) (bool, error) {
				looks++
				waitsAtLook = append(waitsAtLook, len(rec.waits))
				return looks == tt.doneAt, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if looks != tt.doneAt || waitsAtLook[0] != 0 {
				t.Errorf("%d looks, the first after %d waits; want %d, the first at once", looks, waitsAtLook[0], tt.doneAt)
			}
			if !slices.Equal(rec.waits, tt.wantWaits) {
				t.Errorf("waits %v, want %v", rec.waits, tt.wantWaits)
			}
		})
	}
}

func TestPollUntil_lookError(t *testing.T) {
	rec := &recorder{}
	boom := errors.New("boom")
	looks := 0
	err := Poll{Interval: time.Millisecond, Sleep: rec.sleep}.Until(context.Background(), func(context.Context) (bool, error) {
		looks++
		if looks == 2 {
			return false, boom
		}
		return false, nil
	})
	if err != boom || looks != 2 || len(rec.waits) != 1 {
		t.Fatalf("err %v after %d looks and %d waits; want the look's own error after 2 looks and 1 wait", err, looks, len(rec.waits))
	}
}

// A wait of an hour ends as soon as ctx does, with ctx's error (wrapped by
// the waiter with what it waited for).
func TestPollUntil_ctxEnds(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{name: "cancelled", ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, want: context.Canceled},
		{name: "deadline", ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			looks := 0
			err := Poll{Interval: time.Hour}.Until(ctx, func(context.Context) (bool, error) { looks++; return false, nil })
			if !errors.Is(err, tt.want) || looks != 1 {
				t.Fatalf("err %v after %d looks; want %v after 1", err, looks, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("returned after %s, not promptly", d)
			}

			// A waiter wraps it with what it waited for.
			api := &fakeFeatureStoreAPI{describes: []*sagemaker.DescribeFeatureGroupOutput{group("Deleting")}}
			ctx2, cancel2 := tt.ctx()
			defer cancel2()
			err = WaitFeatureStoreDeleted(ctx2, api, "fg", WaitOptions{Poll: Poll{Interval: time.Hour}})
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "waiting for deletion of feature group fg") {
				t.Fatalf("waiter's err = %v, want %v wrapped with what it waited for", err, tt.want)
			}
		})
	}
}

func TestPollOr(t *testing.T) {
	defSleeps, ownSleeps := 0, 0
	defSleep := func(context.Context, time.Duration) error { defSleeps++; return nil }
	ownSleep := func(context.Context, time.Duration) error { ownSleeps++; return nil }
	def := Poll{Interval: 2 * time.Second, Max: 30 * time.Second, Sleep: defSleep}
	tests := []struct {
		name         string
		p            Poll
		wantInterval time.Duration
		wantMax      time.Duration
		wantOwnSleep bool
	}{
		{name: "zero takes all", p: Poll{}, wantInterval: 2 * time.Second, wantMax: 30 * time.Second},
		{name: "an interval keeps its own Max (none: fixed)", p: Poll{Interval: time.Millisecond}, wantInterval: time.Millisecond},
		{name: "a Sleep alone keeps it and takes the intervals", p: Poll{Sleep: ownSleep}, wantInterval: 2 * time.Second, wantMax: 30 * time.Second, wantOwnSleep: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defSleeps, ownSleeps = 0, 0
			got := tt.p.Or(def)
			if got.Interval != tt.wantInterval || got.Max != tt.wantMax {
				t.Fatalf("got interval %s, max %s; want %s, %s", got.Interval, got.Max, tt.wantInterval, tt.wantMax)
			}
			_ = got.Sleep(context.Background(), 0)
			if (ownSleeps == 1) != tt.wantOwnSleep || ownSleeps+defSleeps != 1 {
				t.Fatalf("own sleeps %d, default's %d", ownSleeps, defSleeps)
			}
		})
	}
}

func TestPolling(t *testing.T) {
	def := DefaultPolling()
	for i, k := range def.kinds() {
		if k.Interval <= 0 {
			t.Errorf("default kind %d has no interval", i)
		}
	}
	type span struct{ interval, max time.Duration }
	of := func(p Poll) span { return span{p.Interval, p.Max} }
	want := map[string]span{"nodes": {15 * time.Second, 0}, "gate": {15 * time.Second, 0}, "autoscaling": {15 * time.Second, 0},
		"sagemaker": {2 * time.Second, 30 * time.Second}, "settle": {5 * time.Second, 15 * time.Second}}
	got := map[string]span{"nodes": of(def.Nodes), "gate": of(def.Gate), "autoscaling": of(def.AutoScaling), "sagemaker": of(def.SageMaker), "settle": of(def.Settle)}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("AWS default of %s = %+v, want %+v", k, got[k], w)
		}
	}

	every := PollingEvery(200 * time.Millisecond)
	for i, k := range every.kinds() {
		if k.Interval != 200*time.Millisecond || k.Max != 0 {
			t.Errorf("PollingEvery kind %d = %+v", i, *k)
		}
	}

	// Kinds left zero take the defaults; kinds set keep theirs.
	p := Polling{Gate: Poll{Interval: time.Millisecond}}.WithDefaults()
	if p.Gate.Interval != time.Millisecond || of(p.Nodes) != of(def.Nodes) || of(p.SageMaker) != of(def.SageMaker) {
		t.Errorf("WithDefaults = %+v", p)
	}

	rec := &recorder{}
	s := PollingEvery(time.Millisecond).WithSleep(rec.sleep)
	for _, k := range s.kinds() {
		_ = k.Start().Next(context.Background())
	}
	if len(rec.waits) != len(s.kinds()) {
		t.Errorf("WithSleep reached %d of %d kinds", len(rec.waits), len(s.kinds()))
	}
}

// The SageMaker waiters poll at the interval they are given, growing to
// its Max, and poll first.
func TestSageMakerWaitersUsePoll(t *testing.T) {
	const ms = time.Millisecond
	script := []*sagemaker.DescribeFeatureGroupOutput{group("Creating"), group("Creating"), group("Creating"), group("Creating"), group(types.FeatureGroupStatusCreated)}
	tests := []struct {
		name      string
		poll      Poll
		wantWaits []time.Duration
	}{
		{name: "fixed", poll: Poll{Interval: 3 * ms}, wantWaits: []time.Duration{3 * ms, 3 * ms, 3 * ms, 3 * ms}},
		{name: "growing", poll: Poll{Interval: 3 * ms, Max: 10 * ms}, wantWaits: []time.Duration{3 * ms, 6 * ms, 10 * ms, 10 * ms}},
		{name: "zero: the AWS default", poll: Poll{}, wantWaits: []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			p := tt.poll
			p.Sleep = rec.sleep
			api := &fakeFeatureStoreAPI{describes: script}
			if _, err := WaitFeatureStoreCreated(context.Background(), api, "fg", WaitOptions{Poll: p}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rec.waits, tt.wantWaits) || api.calls != len(script) {
				t.Errorf("waits %v over %d describes, want %v over %d", rec.waits, api.calls, tt.wantWaits, len(script))
			}
		})
	}
}
