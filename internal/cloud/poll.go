package cloud

import (
	"context"
	"time"
)

// Poll is how a waiter polls: it looks at once, then waits Interval
// between looks, each wait twice the one before up to Max when Max is
// above Interval (every wait is Interval otherwise). The deadline is the
// caller's ctx (or the waiter's own timeout).
type Poll struct {
	Interval time.Duration
	Max      time.Duration
	// Sleep waits d or until ctx ends; nil means a timer (SleepOrDone).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Or is p with what it leaves unset taken from def: def's Interval and Max
// when p has no Interval, def's Sleep when p has none.
func (p Poll) Or(def Poll) Poll {
	if p.Interval <= 0 {
		p.Interval, p.Max = def.Interval, def.Max
	}
	if p.Sleep == nil {
		p.Sleep = def.Sleep
	}
	return p
}

// Poller is one wait's way through its Poll's intervals.
type Poller struct {
	sleep     func(ctx context.Context, d time.Duration) error
	next, max time.Duration
}

// Start begins a wait: its first Next sleeps Interval.
func (p Poll) Start() *Poller {
	sleep := p.Sleep
	if sleep == nil {
		sleep = SleepOrDone
	}
	return &Poller{sleep: sleep, next: p.Interval, max: max(p.Max, p.Interval)}
}

// Next waits the current interval, then doubles the next one up to the
// Poll's Max. It returns the sleep's error: ctx's, when ctx ends first.
func (w *Poller) Next(ctx context.Context) error {
	d := w.next
	w.next = min(2*w.next, w.max)
	return w.sleep(ctx, d)
}

// Until calls look at once, then after every interval, until look says it
// is done or returns an error (returned as it is). When ctx ends while it
// waits between looks, Until returns ctx's error; the waiter wraps it with
// what it was waiting for.
func (p Poll) Until(ctx context.Context, look func(ctx context.Context) (done bool, err error)) error {
	w := p.Start()
	for {
		done, err := look(ctx)
		if done || err != nil {
			return err
		}
		if err := w.Next(ctx); err != nil {
			return err
		}
	}
}

// SleepOrDone waits d, or until ctx ends.
func SleepOrDone(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Polling is how every kind of wait polls: the one place the intervals
// live. DefaultPolling is real AWS's; PollingEvery is for emulators and
// tests. A kind left zero polls as DefaultPolling says.
type Polling struct {
	// Nodes: EC2 instances running or terminated (GPU clusters).
	Nodes Poll
	// SageMaker: feature groups and serving endpoints created, updated or
	// deleted.
	SageMaker Poll
	// Settle: a read waiting for a feature group's deletion under way to
	// end (a refresh).
	Settle Poll
	// AutoScaling: an Auto Scaling group deleted, an instance refresh (CPU
	// footprints).
	AutoScaling Poll
	// Gate: the validation gate looking for the nodes' reports.
	Gate Poll
}

// DefaultPolling is how the waits poll real AWS.
func DefaultPolling() Polling {
	return Polling{
		Nodes:       Poll{Interval: 15 * time.Second},
		SageMaker:   Poll{Interval: 2 * time.Second, Max: 30 * time.Second},
		Settle:      Poll{Interval: 5 * time.Second, Max: 15 * time.Second},
		AutoScaling: Poll{Interval: 15 * time.Second},
		Gate:        Poll{Interval: 15 * time.Second},
	}
}

// PollingEvery polls every kind of wait every d, without growing: for
// emulators and tests, which must never sleep an interval meant for AWS.
func PollingEvery(d time.Duration) Polling {
	var p Polling
	for _, k := range p.kinds() {
		*k = Poll{Interval: d}
	}
	return p
}

// WithSleep is p with every kind sleeping through sleep (tests).
func (p Polling) WithSleep(sleep func(ctx context.Context, d time.Duration) error) Polling {
	for _, k := range p.kinds() {
		k.Sleep = sleep
	}
	return p
}

// WithDefaults is p with each kind it leaves zero taken from
// DefaultPolling.
func (p Polling) WithDefaults() Polling {
	def := DefaultPolling()
	for i, k := range p.kinds() {
		*k = k.Or(*def.kinds()[i])
	}
	return p
}

func (p *Polling) kinds() []*Poll {
	return []*Poll{&p.Nodes, &p.SageMaker, &p.Settle, &p.AutoScaling, &p.Gate}
}
