package acctest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
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
//
// Every rule is wiped by Reset. Nothing in the product depends on this.

// FaultRule changes what happens to calls of one operation that reach moto.
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
	// Before runs when a matching call arrives, before the delay.
	Before func(r *Request)
}

type faultRule struct {
	FaultRule
	left   int // <0: unlimited
	tokens map[string]*httptest.ResponseRecorder
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
// the injected errors and the doubles' state stay).
func (s *Shim) ClearRules() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// isHook reports whether a rule only runs a function on arrival.
func (f *faultRule) isHook() bool {
	return f.Before != nil && f.Delay == 0 && !f.LoseResponse && f.tokens == nil
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
		if f.isHook() || f.Service != r.Service || f.Action != r.Action || r.Fixture || (f.Match != nil && !f.Match(r)) || f.left == 0 {
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
	// the client does.
	r.HTTP = r.HTTP.WithContext(context.WithoutCancel(r.HTTP.Context()))
	h := next
	for i := len(rules) - 1; i >= 0; i-- {
		f, inner := rules[i], h
		h = func(w http.ResponseWriter) { s.apply(w, r, call, f, inner) }
	}
	h(w)
}

func (s *Shim) apply(w http.ResponseWriter, r *Request, call *Call, f *faultRule, next func(http.ResponseWriter)) {
	if f.Before != nil {
		f.Before(r)
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
