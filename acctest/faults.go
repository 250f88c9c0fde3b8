package acctest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Test double: the fault-injection layer of the shim.
//
// Besides the AWS errors of Inject (answered instead of moto), the shim can
// make calls that reach moto misbehave on the way back, the faults a real
// network and a real AWS show:
//
//   - Delay: the call waits before it reaches moto (a slow RunInstances);
//     it still reaches moto after the client gave up, as a real request
//     that left the client does.
//   - LoseResponses: the call succeeds at moto, the client sees a 500.
//   - Throttle: a burst of throttling errors (RequestLimitExceeded, 503).
//   - NoCapacityInSubnets: InsufficientInstanceCapacity for launches into
//     the given subnets (per-zone capacity).
//   - ReplayClientTokens: EC2 idempotency. moto ignores ClientToken, so a
//     retried RunInstances launches again there; with this on, a request
//     that repeats an earlier token gets the earlier answer and launches
//     nothing, as EC2 does. Without it a test cannot tell a double launch.
//   - OnCall: run a function when a call arrives (an interrupt test cancels
//     its context at a chosen step).
//   - Hold: the call waits at a Hold until the test releases it, or until
//     its client has given up on it; it then goes on, as a request that
//     left the client does. The Hold tells the test when calls reached it
//     and when they were answered, so that a test waits on those events
//     instead of sleeping "long enough": a Terraform timeout runs out at the
//     held step on any machine, and the test goes on once the held call has
//     landed.
//
// Rules act on the way to moto (AddRule); AddServedRule puts one in front of
// an operation the shim serves itself (a double). Every rule is wiped by
// Reset. Nothing in the product depends on this.

// FaultRule changes what happens to calls of one operation that reach moto
// (AddRule) or that the shim serves itself (AddServedRule).
type FaultRule struct {
	Service, Action string
	// Match, when set, limits the rule to requests it accepts.
	Match func(r *Request) bool
	// Times is how many calls the rule applies to; 0 or less: every call.
	Times int
	// Delay holds the call this long before it goes on to moto.
	Delay time.Duration
	// LoseResponse lets the call succeed at moto and answers the client with
	// a 500 InternalError instead.
	LoseResponse bool
	// Before runs when a matching call arrives, before the hold and the
	// delay.
	Before func(r *Request)
	// Hold, when set, holds the call at h (after Before, before Delay) until
	// h is released, or, for a hold of HoldUntilClientGone, until the call's
	// client has given up on it. The call then goes on even though its
	// client is gone. Removing the rule (ClearRules) releases h.
	Hold *Hold
}

type faultRule struct {
	FaultRule
	left   int // <0: unlimited
	tokens map[string]*httptest.ResponseRecorder
	served bool // AddServedRule: applied by its handler, not on the way to moto
}

// AddRule adds a fault rule. Rules apply in the order they were added.
func (s *Shim) AddRule(f FaultRule) {
	left := f.Times
	if left <= 0 {
		left = -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &faultRule{FaultRule: f, left: left})
}

// Delay holds the next times calls of service's action (0: every call) for
// d before they reach moto.
func (s *Shim) Delay(service, action string, d time.Duration, times int) {
	s.AddRule(FaultRule{Service: service, Action: action, Delay: d, Times: times})
}

// LoseResponses makes the next times calls of service's action (0: every
// call) succeed at moto while the client sees a 500.
func (s *Shim) LoseResponses(service, action string, times int) {
	s.AddRule(FaultRule{Service: service, Action: action, LoseResponse: true, Times: times})
}

// OnCall runs f when a call of service's action arrives (every call, until
// Reset), before it is answered.
func (s *Shim) OnCall(service, action string, f func(r *Request)) {
	s.AddRule(FaultRule{Service: service, Action: action, Before: f})
}

// Throttle answers the next times calls of service's action with
// RequestLimitExceeded (503), the way EC2 throttles.
func (s *Shim) Throttle(service, action string, times int) {
	s.Inject(Fault{Service: service, Action: action, Code: "RequestLimitExceeded", Message: "Request limit exceeded (injected throttling).", Status: http.StatusServiceUnavailable, Times: times})
}

// NoCapacityInSubnets makes every RunInstances into one of subnetIDs fail
// with InsufficientInstanceCapacity (a zone without capacity).
func (s *Shim) NoCapacityInSubnets(subnetIDs ...string) {
	s.Inject(Fault{Service: "ec2", Action: "RunInstances", Code: "InsufficientInstanceCapacity",
		Message: "We currently do not have sufficient capacity in the Availability Zone you requested (injected).",
		Match: func(r *Request) bool {
			for _, id := range subnetIDs {
				if r.Form.Get("NetworkInterface.1.SubnetId") == id || r.Form.Get("SubnetId") == id {
					return true
				}
			}
			return false
		}})
}

// ReplayClientTokens makes RunInstances idempotent on ClientToken, as EC2
// is and moto is not: a request repeating a token gets the first answer.
func (s *Shim) ReplayClientTokens() {
	s.AddRule(FaultRule{Service: "ec2", Action: "RunInstances"})
	s.mu.Lock()
	s.rules[len(s.rules)-1].tokens = map[string]*httptest.ResponseRecorder{}
	s.mu.Unlock()
}

// ClearRules removes the fault rules (and nothing else: the request log,
// the injected errors and the doubles' state stay) and releases the calls
// they hold.
func (s *Shim) ClearRules() {
	s.mu.Lock()
	rules := s.rules
	s.rules = nil
	s.mu.Unlock()
	for _, f := range rules {
		if f.Hold != nil {
			f.Hold.Release()
		}
	}
}

// AddServedRule is AddRule for an operation the shim serves itself (a double
// registered with Handle, or a SageMaker fault of InjectSageMaker): rules of
// AddRule act on the way to moto, which such an operation does not take. It
// wraps the handler that serves f's operation now (moto when none), as
// InjectSageMaker does, and applies f to the calls it matches (fixture calls
// never). Match may call the shim (CountOK). Token replay is not offered.
// ClearRules and Reset end the rule (the wrapper then passes every call
// on); the returned function also removes the wrapper: t.Cleanup(remove).
func (s *Shim) AddServedRule(f FaultRule) (remove func()) {
	left := f.Times
	if left <= 0 {
		left = -1
	}
	rule := &faultRule{FaultRule: f, left: left, served: true}
	k := opKey{f.Service, f.Action}
	s.mu.Lock()
	var next HandlerFunc = forwardToMoto
	if hs := s.handlers[k]; len(hs) > 0 {
		next = hs[len(hs)-1].h
	}
	s.rules = append(s.rules, rule)
	s.mu.Unlock()
	unhandle := s.Handle(f.Service, f.Action, func(w http.ResponseWriter, r *Request) {
		if r.Fixture || (f.Match != nil && !f.Match(r)) {
			next(w, r)
			return
		}
		s.mu.Lock()
		live := slices.Contains(s.rules, rule) && rule.left != 0
		if live && rule.left > 0 {
			rule.left--
		}
		s.mu.Unlock()
		if !live {
			next(w, r)
			return
		}
		client := r.HTTP.Context()
		r.HTTP = r.HTTP.WithContext(context.WithoutCancel(client))
		var call Call // the shim logs the call it serves; Source stays "shim"
		s.apply(w, r, &call, client, rule, func(w http.ResponseWriter) { next(w, r) })
	})
	return func() {
		unhandle()
		s.mu.Lock()
		s.rules = slices.DeleteFunc(s.rules, func(x *faultRule) bool { return x == rule })
		s.mu.Unlock()
		if f.Hold != nil {
			f.Hold.Release()
		}
	}
}

// isHook reports whether a rule only runs a function on arrival.
func (f *faultRule) isHook() bool {
	return f.Before != nil && f.Delay == 0 && !f.LoseResponse && f.tokens == nil && f.Hold == nil && !f.served
}

// runHooks runs the OnCall functions matching r, for every call (those the
// shim serves itself included).
func (s *Shim) runHooks(r *Request) {
	s.mu.Lock()
	var hooks []func(*Request)
	for _, f := range s.rules {
		if f.isHook() && f.Service == r.Service && f.Action == r.Action && (f.Match == nil || f.Match(r)) {
			hooks = append(hooks, f.Before)
		}
	}
	s.mu.Unlock()
	for _, h := range hooks {
		h(r)
	}
}

// forward sends r on to moto through the rules that match it. call.Source
// says "fault" when a rule changed the answer.
func (s *Shim) forward(w http.ResponseWriter, r *Request, call *Call, next func(http.ResponseWriter)) {
	s.mu.Lock()
	var rules []*faultRule
	for _, f := range s.rules {
		if f.isHook() || f.served || f.Service != r.Service || f.Action != r.Action || r.Fixture || (f.Match != nil && !f.Match(r)) || f.left == 0 {
			continue
		}
		if f.left > 0 {
			f.left--
		}
		rules = append(rules, f)
	}
	s.mu.Unlock()
	if len(rules) == 0 {
		next(w)
		return
	}
	// Token replay stands for EC2 itself: innermost, next to moto, so that
	// an answer lost on the way back is still remembered.
	slices.SortStableFunc(rules, func(a, b *faultRule) int {
		return cmp.Compare(boolInt(a.tokens != nil), boolInt(b.tokens != nil))
	})
	// The call goes on after the client gives up, as a request that left
	// the client does. client still ends when it does (HoldUntilClientGone).
	client := r.HTTP.Context()
	r.HTTP = r.HTTP.WithContext(context.WithoutCancel(client))
	h := next
	for i := len(rules) - 1; i >= 0; i-- {
		f, inner := rules[i], h
		h = func(w http.ResponseWriter) { s.apply(w, r, call, client, f, inner) }
	}
	h(w)
}

// apply applies f to r on its way to next. client is the context of r as
// it arrived: it ends when the client gives up.
func (s *Shim) apply(w http.ResponseWriter, r *Request, call *Call, client context.Context, f *faultRule, next func(http.ResponseWriter)) {
	if f.Before != nil {
		f.Before(r)
	}
	if f.Hold != nil {
		answered := f.Hold.hold(client)
		defer answered()
	}
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	switch {
	case f.tokens != nil && r.Form.Get("ClientToken") != "":
		tok := r.Form.Get("ClientToken")
		s.mu.Lock()
		prev := f.tokens[tok]
		s.mu.Unlock()
		if prev == nil {
			rec := httptest.NewRecorder()
			next(rec)
			if rec.Code == http.StatusOK {
				s.mu.Lock()
				f.tokens[tok] = rec
				s.mu.Unlock()
			}
			copyRecorded(w, rec)
			return
		}
		call.Source = "fault"
		copyRecorded(w, prev)
	case f.LoseResponse:
		rec := httptest.NewRecorder()
		next(rec)
		call.Source = "fault"
		WriteAWSError(w, r, http.StatusInternalServerError, "InternalError", fmt.Sprintf("the call reached the service (status %d) but its answer was lost (injected)", rec.Code))
	default:
		next(w)
	}
}

func copyRecorded(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// Hold holds the calls of the rules that name it (FaultRule.Hold) until the
// test releases it, and reports two events a test waits on instead of a
// fixed sleep: a call reached it (WaitArrived) and the calls it held were
// answered, that is, the held call landed at moto or the double
// (WaitAnswered). A call held by a Hold goes on even though its client gave
// up meanwhile, as a request that reached AWS does.
//
// A Hold is released for good: calls reaching it afterwards pass at once
// (and are still counted). ClearRules releases the holds of the rules it
// removes; Reset does not. When the test ends, NewHold and
// HoldUntilClientGone release it and wait for what it held to land, so
// that no held call reaches the emulator after it went back to the pool.
type Hold struct {
	untilGone bool
	released  chan struct{}
	once      sync.Once

	mu                sync.Mutex
	arrived, answered int
	changed           chan struct{} // closed and replaced when a count changes
}

// NewHold returns a Hold that keeps every call reaching it until Release.
func NewHold(t testing.TB) *Hold {
	h := &Hold{released: make(chan struct{}), changed: make(chan struct{})}
	t.Cleanup(func() {
		h.Release()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.WaitAnswered(ctx); err != nil {
			t.Errorf("acctest: a call held by the test did not land: %v", err)
		}
	})
	return h
}

// HoldUntilClientGone returns a Hold that keeps each call reaching it until
// the call's client has given up on it (its context was cancelled or ran
// out, and the SDK closed the connection), or until Release. The call then
// lands after the client gave up, whatever the machine's speed.
func HoldUntilClientGone(t testing.TB) *Hold {
	h := NewHold(t)
	h.untilGone = true
	return h
}

// Release lets every held call, and every later one, go on.
func (h *Hold) Release() { h.once.Do(func() { close(h.released) }) }

// Released reports whether Release was called. It can arm a fault for as
// long as a hold lasts (SageMakerFault.Armed: a status held until the test
// releases it).
func (h *Hold) Released() bool {
	select {
	case <-h.released:
		return true
	default:
		return false
	}
}

// Arrived is how many calls reached the hold.
func (h *Hold) Arrived() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.arrived
}

// WaitArrived waits until n calls have reached the hold.
func (h *Hold) WaitArrived(ctx context.Context, n int) error {
	return h.wait(ctx, func() bool { return h.arrived >= n }, fmt.Sprintf("%d calls to reach the hold", n))
}

// WaitAnswered waits until every call that has reached the hold so far has
// been answered (after its release): what it held has landed. It returns at
// once when no call reached the hold.
func (h *Hold) WaitAnswered(ctx context.Context) error {
	return h.wait(ctx, func() bool { return h.answered >= h.arrived }, "the held calls to be answered")
}

func (h *Hold) wait(ctx context.Context, done func() bool, what string) error {
	for {
		h.mu.Lock()
		ok, changed, arrived, answered := done(), h.changed, h.arrived, h.answered
		h.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s (%d arrived, %d answered, released %t): %w", what, arrived, answered, h.Released(), ctx.Err())
		}
	}
}

func (h *Hold) count(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
	close(h.changed)
	h.changed = make(chan struct{})
}

// hold counts a call in and blocks it until the hold is released (or, for
// HoldUntilClientGone, client ends). The returned function counts it as
// answered.
func (h *Hold) hold(client context.Context) (answered func()) {
	h.count(func() { h.arrived++ })
	var gone <-chan struct{}
	if h.untilGone {
		gone = client.Done()
	}
	select {
	case <-h.released:
	case <-gone:
	}
	return func() { h.count(func() { h.answered++ }) }
}

// WaitCalls waits until cond holds for the request log (Log), looking again
// every 10 ms: a test waits there on what the shim has answered (the
// read-back that follows a held call) instead of sleeping "long enough".
func (s *Shim) WaitCalls(ctx context.Context, cond func([]Call) bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond(s.Log()) {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("waiting on the shim's request log: %w", ctx.Err())
		}
	}
	return nil
}
