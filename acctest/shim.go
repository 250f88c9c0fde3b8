package acctest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Shim is a test double in front of moto: it implements only the operations
// moto lacks (registered with Handle), injects faults (InjectError), records
// every request, and forwards everything else to moto unchanged. It is test
// code; nothing in the product depends on it.
//
// Besides AWS requests it serves a small control API for users outside the
// test process (the Pulumi engine, make demo):
//
//	GET  /shim/log[?writes=true]  the request log as JSON ([]Call)
//	POST /shim/reset              reset moto and the shim
//	POST /shim/faults             inject a fault (JSON Fault without Match)
//	GET  /shim/health             200 when up
//
// Requests under /moto-api/ go to moto as they are.
type Shim struct {
	// URL is the shim's base URL: the endpoint for every AWS service.
	URL string

	upstream *url.URL
	proxy    *httputil.ReverseProxy
	client   *http.Client
	server   *http.Server
	listener net.Listener
	observe  func(Call)

	mu       sync.Mutex
	handlers map[opKey][]*handlerEntry // the last one serves
	faults   []*faultEntry
	rules    []*faultRule // faults.go: delays, lost answers, token replay
	calls    []Call
	onReset  []func()
}

// HandlerFunc serves one AWS operation in the shim. Use WriteEC2XML,
// WriteJSON and WriteAWSError to answer in the service's protocol.
type HandlerFunc func(w http.ResponseWriter, r *Request)

// Call is one entry of the shim's request log.
type Call struct {
	Time    time.Time `json:"time"`
	Service string    `json:"service"`
	Action  string    `json:"action"`
	Region  string    `json:"region"`
	Method  string    `json:"method"`
	Path    string    `json:"path"`
	Write   bool      `json:"write"`
	Status  int       `json:"status"`
	// Source is who answered: "moto", "shim" (a Handle'd operation) or
	// "fault" (an injected error).
	Source string `json:"source"`
	// Fixture marks calls made by the harness's fixture clients.
	Fixture bool `json:"fixture,omitempty"`
}

func (c Call) String() string {
	w := "read"
	if c.Write {
		w = "write"
	}
	fix := ""
	if c.Fixture {
		fix = " (fixture)"
	}
	return fmt.Sprintf("%s %s %s.%s %s %s %s -> %d from %s%s",
		c.Time.Format("15:04:05.000"), w, c.Service, c.Action, c.Region, c.Method, c.Path, c.Status, c.Source, fix)
}

// Fault makes matching calls fail with an AWS error instead of reaching moto.
type Fault struct {
	Service string `json:"service"`
	Action  string `json:"action"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Status is the HTTP status; 0 means 400. A 5xx status or a throttling
	// code makes the AWS SDK retry on its own, and each retry uses up one of
	// Times.
	Status int `json:"status,omitempty"`
	// Times is how many calls fail; 0 or less means every call until Reset.
	Times int `json:"times"`
	// Match, when set, limits the fault to requests it accepts, for example
	// r.Form.Get("Placement.AvailabilityZone") == "me-central-1a".
	Match func(r *Request) bool `json:"-"`
}

type opKey struct{ service, action string }

type handlerEntry struct{ h HandlerFunc }

type faultEntry struct {
	Fault
	left int // remaining failures; <0 = unlimited
}

// ShimOptions configures StartShim.
type ShimOptions struct {
	// Addr to listen on. Default 127.0.0.1:0 (a free port).
	Addr string
	// Observe, when set, is called with each call after it is answered
	// (the emulator prints them).
	Observe func(Call)
}

// StartShim starts the shim in front of the moto at upstream.
func StartShim(upstream string, opts ShimOptions) (*Shim, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("parsing upstream URL: %w", err)
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("starting shim: %w", err)
	}
	s := &Shim{
		URL:      "http://" + l.Addr().String(),
		upstream: u,
		client:   &http.Client{Timeout: 5 * time.Minute},
		listener: l,
		observe:  opts.Observe,
		handlers: map[opKey][]*handlerEntry{},
	}
	s.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			// Keep the client's Host so that URLs moto puts in responses
			// lead back to the shim.
			pr.Out.Host = pr.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, hr *http.Request, err error) {
			r := parseRequest(hr, nil)
			WriteAWSError(w, r, http.StatusBadGateway, "ShimUpstreamError", fmt.Sprintf("forwarding to moto: %v", err))
		},
	}
	s.server = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

// Close stops the shim's listener.
func (s *Shim) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.server.Shutdown(ctx); err != nil {
		return fmt.Errorf("stopping shim: %w", err)
	}
	return nil
}

// Handle makes the shim serve service's action itself instead of forwarding
// it to moto (service as in the credential scope: "ec2", "sagemaker", "s3").
// A later registration for the same operation wins until it is removed, so a
// test can override a double for itself: t.Cleanup(shim.Handle(...)).
// Handlers stay registered across Reset; keep their state in the shim's
// reset cycle with OnReset. The returned function removes this registration.
func (s *Shim) Handle(service, action string, h HandlerFunc) (remove func()) {
	k := opKey{service, action}
	e := &handlerEntry{h}
	s.mu.Lock()
	s.handlers[k] = append(s.handlers[k], e)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.handlers[k] = slices.DeleteFunc(s.handlers[k], func(x *handlerEntry) bool { return x == e })
		if len(s.handlers[k]) == 0 {
			delete(s.handlers, k)
		}
	}
}

// HandleOver is Handle for a double that serves only part of an operation
// (the tagging calls of its own ARNs): h gets next, the handler it was
// registered over (moto when there is none), for the requests it leaves.
func (s *Shim) HandleOver(service, action string, h func(w http.ResponseWriter, r *Request, next HandlerFunc)) (remove func()) {
	k := opKey{service, action}
	s.mu.Lock()
	var next HandlerFunc = forwardToMoto
	if hs := s.handlers[k]; len(hs) > 0 {
		next = hs[len(hs)-1].h
	}
	s.mu.Unlock()
	return s.Handle(service, action, func(w http.ResponseWriter, r *Request) { h(w, r, next) })
}

// OnReset registers f to run on every Reset, for the state of Handle'd
// operations (placement groups, capacity reservations, ...).
func (s *Shim) OnReset(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onReset = append(s.onReset, f)
}

// InjectError makes the next times calls of service's action fail with code
// and msg (times <= 0: every call until Reset). For more control (status,
// matching on the request) use Inject.
func (s *Shim) InjectError(service, action, code, msg string, times int) {
	s.Inject(Fault{Service: service, Action: action, Code: code, Message: msg, Times: times})
}

// Inject adds a fault. Faults are checked in the order they were added.
func (s *Shim) Inject(f Fault) {
	left := f.Times
	if left <= 0 {
		left = -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultEntry{Fault: f, left: left})
}

// Reset clears the request log and the faults and runs the OnReset
// functions. Handlers stay. It does not touch moto (Harness.Reset does both).
func (s *Shim) Reset() {
	s.mu.Lock()
	s.calls = nil
	s.faults = nil
	s.rules = nil
	hooks := append([]func(){}, s.onReset...)
	s.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// ResetLog clears only the request log, for example after a test created
// its fixtures.
func (s *Shim) ResetLog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// Log returns every call recorded since the last Reset, oldest first.
func (s *Shim) Log() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Writes returns the calls that change state, fixture calls excluded.
func (s *Shim) Writes() []Call {
	var out []Call
	for _, c := range s.Log() {
		if c.Write && !c.Fixture {
			out = append(out, c)
		}
	}
	return out
}

// Calls returns the calls of service's action (fixture calls included).
// An empty action matches every action of the service.
func (s *Shim) Calls(service, action string) []Call {
	var out []Call
	for _, c := range s.Log() {
		if c.Service == service && (action == "" || c.Action == action) {
			out = append(out, c)
		}
	}
	return out
}

// FaultsServed counts the calls of service's action, other than the
// fixtures', that a fault rule answered (a throttle, a lost answer, a
// replayed token).
func (s *Shim) FaultsServed(service, action string) int {
	n := 0
	for _, c := range s.Calls(service, action) {
		if c.Source == "fault" && !c.Fixture {
			n++
		}
	}
	return n
}

// ServeHTTP implements http.Handler.
func (s *Shim) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	if strings.HasPrefix(hr.URL.Path, "/shim/") {
		s.serveControl(w, hr)
		return
	}
	if strings.HasPrefix(hr.URL.Path, "/moto-api/") {
		s.proxy.ServeHTTP(w, hr)
		return
	}

	var body []byte
	if hr.Body != nil {
		var err error
		body, err = io.ReadAll(hr.Body)
		hr.Body.Close()
		if err != nil {
			http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	restore := func() {
		hr.Body = readCloser(body)
		hr.ContentLength = int64(len(body))
		hr.TransferEncoding = nil
	}
	restore()
	r := parseRequest(hr, body)
	r.shim = s

	call := Call{
		Time:    time.Now(),
		Service: r.Service,
		Action:  r.Action,
		Region:  r.Region,
		Method:  hr.Method,
		Path:    hr.URL.Path,
		Write:   IsWrite(r.Service, r.Action, hr.Method),
		Fixture: r.Fixture,
	}
	// The call is logged when its status is written, before any byte of the
	// answer reaches the client, so a client that has its answer always
	// finds the call in the log.
	logged := false
	record := func(status int) {
		if logged {
			return
		}
		logged = true
		call.Status = status
		s.mu.Lock()
		s.calls = append(s.calls, call)
		s.mu.Unlock()
	}
	rec := &statusRecorder{ResponseWriter: w, onHeader: record}

	s.runHooks(r)
	s.mu.Lock()
	fault := s.takeFault(r)
	var h *handlerEntry
	if hs := s.handlers[opKey{r.Service, r.Action}]; len(hs) > 0 {
		h = hs[len(hs)-1]
	}
	s.mu.Unlock()

	switch {
	case fault != nil:
		call.Source = "fault"
		WriteAWSError(rec, r, fault.Status, fault.Code, fault.Message)
	case h != nil && r.Action != "":
		call.Source = "shim"
		h.h(rec, r)
	default:
		call.Source = "moto"
		s.forward(rec, r, &call, func(w http.ResponseWriter) {
			serve := func(w http.ResponseWriter) {
				out := r.HTTP // hr, or hr detached from the client by a rule
				out.Body, out.ContentLength, out.TransferEncoding = readCloser(body), int64(len(body)), nil
				s.proxy.ServeHTTP(w, out)
			}
			if r.Service == "monitoring" && r.Action == "DeleteAlarms" {
				forwardDeleteAlarms(w, r, serve)
				return
			}
			serve(w)
		})
	}
	record(http.StatusOK) // the handler wrote nothing
	if s.observe != nil {
		s.observe(call)
	}
}

// takeFault returns the first fault matching r and uses it up once.
// s.mu must be held; Match runs under it and must not call the shim.
func (s *Shim) takeFault(r *Request) *faultEntry {
	for i, f := range s.faults {
		if f.Service != r.Service || f.Action != r.Action {
			continue
		}
		if f.Match != nil && !f.Match(r) {
			continue
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return f
	}
	return nil
}

func (s *Shim) serveControl(w http.ResponseWriter, hr *http.Request) {
	writeJSON := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	}
	switch {
	case hr.URL.Path == "/shim/health":
		writeJSON(http.StatusOK, map[string]string{"status": "ok", "moto": s.upstream.String()})
	case hr.URL.Path == "/shim/log" && hr.Method == http.MethodGet:
		calls := s.Log()
		if hr.URL.Query().Get("writes") == "true" {
			calls = s.Writes()
		}
		if calls == nil {
			calls = []Call{}
		}
		writeJSON(http.StatusOK, calls)
	case hr.URL.Path == "/shim/reset" && hr.Method == http.MethodPost:
		if err := motoReset(hr.Context(), s.upstream.String()); err != nil {
			writeJSON(http.StatusBadGateway, map[string]string{"error": err.Error()})
			return
		}
		s.Reset()
		writeJSON(http.StatusOK, map[string]string{"status": "reset"})
	case hr.URL.Path == "/shim/faults" && hr.Method == http.MethodPost:
		var f Fault
		if err := json.NewDecoder(hr.Body).Decode(&f); err != nil {
			writeJSON(http.StatusBadRequest, map[string]string{"error": "decoding fault: " + err.Error()})
			return
		}
		if f.Service == "" || f.Action == "" || f.Code == "" {
			writeJSON(http.StatusBadRequest, map[string]string{"error": "service, action and code are required"})
			return
		}
		s.Inject(f)
		writeJSON(http.StatusOK, map[string]string{"status": "injected"})
	default:
		writeJSON(http.StatusNotFound, map[string]string{"error": "unknown shim endpoint " + hr.Method + " " + hr.URL.Path})
	}
}

// statusRecorder remembers the status code written through it.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	onHeader func(status int) // called once, before the status is sent
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		if r.onHeader != nil {
			r.onHeader(code)
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// healthy checks that the shim at baseURL answers GET /shim/health.
func healthy(ctx context.Context, baseURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/shim/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("shim health: status %s", resp.Status)
	}
	return nil
}
