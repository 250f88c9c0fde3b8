package acctest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Test double: faults on SageMaker feature group operations that Fault (an
// error instead of the call) cannot express. A call can be served and its
// answer lost (the change happens, the client sees a 500, as when a
// response is dropped), held before it is served, served without effect, or
// its describe can report another status (CreateFailed, Deleting,
// DeleteFailed), which moto and the feature group double never reach on
// their own. It wraps whichever handler serves the operation, so it is kept
// small and apart from the general fault layer, to be folded into it later.

// SageMakerFault is one fault on a SageMaker operation served by the shim.
type SageMakerFault struct {
	Action string // e.g. CreateFeatureGroup, DescribeFeatureGroup
	// Armed, when set, is asked before each call: false lets the call pass
	// unharmed (and does not count against Times).
	Armed func() bool
	// Times is how many calls are harmed; 0 or less means every armed call.
	Times int
	// OnCall, when set, is called as a harmed call arrives, before it is
	// served: a test cancels its context there to interrupt a call in flight.
	OnCall func()

	// LoseResponse serves the call (it takes effect) and then answers 500
	// InternalFailure, as if the response had been lost.
	LoseResponse bool
	// Delay holds the call this long before serving it; it is served even if
	// the client gave up meanwhile (the request had reached the service).
	Delay time.Duration
	// Swallow answers 200 {} without serving the call: it has no effect.
	Swallow bool
	// Code, when set, answers this AWS error (with Message and Status, 0
	// meaning 400) without serving the call, like Fault, but only while
	// Armed.
	Code, Message string
	Status        int
	// Statuses rewrites FeatureGroupStatus in DescribeFeatureGroup answers:
	// the first harmed call reports Statuses[0], the next Statuses[1], and
	// the last one repeats. FailureReason goes with them.
	Statuses      []string
	FailureReason string
}

// InjectSageMaker adds f in front of the handler that serves its action now
// (the feature group double, or moto) and returns a function that removes it.
func InjectSageMaker(s *Shim, f SageMakerFault) (remove func()) {
	s.mu.Lock()
	var next HandlerFunc = forwardToMoto
	if hs := s.handlers[opKey{"sagemaker", f.Action}]; len(hs) > 0 {
		next = hs[len(hs)-1].h
	}
	s.mu.Unlock()

	var mu sync.Mutex
	harmed := 0
	take := func() (int, bool) {
		if f.Armed != nil && !f.Armed() {
			return 0, false
		}
		mu.Lock()
		defer mu.Unlock()
		if f.Times > 0 && harmed >= f.Times {
			return 0, false
		}
		harmed++
		return harmed, true
	}
	return s.Handle("sagemaker", f.Action, func(w http.ResponseWriter, r *Request) {
		n, ok := take()
		if !ok {
			next(w, r)
			return
		}
		if f.OnCall != nil {
			f.OnCall()
		}
		if f.Delay > 0 {
			// The request reached the service: it is served even if the
			// client gives up meanwhile.
			r.HTTP = r.HTTP.WithContext(context.WithoutCancel(r.HTTP.Context()))
			time.Sleep(f.Delay)
		}
		switch {
		case f.Code != "":
			WriteAWSError(w, r, f.Status, f.Code, f.Message)
		case f.Swallow:
			WriteJSON(w, map[string]any{})
		case f.LoseResponse:
			next(httptest.NewRecorder(), r)
			WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", "injected: the call was served but its response was lost")
		case len(f.Statuses) > 0:
			rec := httptest.NewRecorder()
			next(rec, r)
			var out map[string]any
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
				copyRecorded(w, rec)
				return
			}
			out["FeatureGroupStatus"] = f.Statuses[min(n, len(f.Statuses))-1]
			if f.FailureReason != "" {
				out["FailureReason"] = f.FailureReason
			}
			WriteJSON(w, out)
		default:
			next(w, r)
		}
	})
}

// AfterCall is an Armed function: true once a call of the SageMaker action
// (not a fixture call) has been answered with 200.
func AfterCall(s *Shim, action string) func() bool {
	return func() bool { return CountOK(s, action) > 0 }
}

// CountOK counts the calls of the SageMaker action (fixture calls left out)
// answered with 200.
func CountOK(s *Shim, action string) int {
	n := 0
	for _, c := range s.Calls("sagemaker", action) {
		if !c.Fixture && c.Status == http.StatusOK {
			n++
		}
	}
	return n
}
