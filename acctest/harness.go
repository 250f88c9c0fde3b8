// Package acctest is the acceptance-test harness: it runs moto (the AWS
// emulator) behind a shim that records every request and implements the few
// operations moto lacks, finds the Terraform CLI, and gives tests the
// provider factories, provider configuration and AWS clients to use them.
//
// A test package opts in with
//
//	func TestMain(m *testing.M) { acctest.Main(m) }
//
// and each acceptance test calls acctest.Setup(t) first. Setup makes the
// test parallel and gives it an emulator of its own from a pool (one per
// test that may run at once), reset before the test; the test reaches it
// through its provider block (h.ProviderConfig) and h.Clients, never
// through process-wide environment, which is the same for every test.
package acctest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// Region is the region acceptance tests run in (the UAE).
const Region = "me-central-1"

// fixtureAppID marks the requests of fixture clients in their User-Agent.
const fixtureAppID = "acctest-fixture"

// Options configures Start.
type Options struct {
	Moto MotoOptions
	Shim ShimOptions
}

// Harness is a running moto with the shim in front of it.
type Harness struct {
	// URL is the shim's URL: the endpoint for every AWS service.
	URL  string
	Moto *Moto
	Shim *Shim
	// Refreshes is the instance-refresh double (moto has none).
	Refreshes *RefreshDouble
	// SageMakerEndpoints is the shim's SageMaker endpoint double (test code).
	SageMakerEndpoints *ShimEndpoints
	// EKSAccessEntries lists the access entries the shim keeps for a
	// cluster, by principal (moto has none).
	EKSAccessEntries func(cluster string) map[string]EKSAccessEntry
}

// Start starts moto and the shim in front of it.
func Start(ctx context.Context, opts Options) (*Harness, error) {
	m, err := StartMoto(ctx, opts.Moto)
	if err != nil {
		return nil, err
	}
	s, err := StartShim(m.URL, opts.Shim)
	if err != nil {
		return nil, errors.Join(err, m.Stop())
	}
	RegisterSageMakerFeatureGroups(s)
	RegisterEC2GPUCluster(s)
	RegisterEC2ImageTPM(s)
	RegisterSSMPublicParameters(s)
	RegisterSageMakerModelIsolation(s)
	endpoints := RegisterSageMakerEndpoints(s)
	entries := RegisterEKSAccessEntries(s)
	return &Harness{URL: s.URL, Moto: m, Shim: s, Refreshes: RegisterAutoScalingRefreshes(s), SageMakerEndpoints: endpoints, EKSAccessEntries: entries}, nil
}

// Stop stops the shim and moto.
func (h *Harness) Stop() error {
	return errors.Join(h.Shim.Close(), h.Moto.Stop())
}

// Reset wipes moto's state and the shim's (request log, faults, the state of
// Handle'd operations).
func (h *Harness) Reset(ctx context.Context) error {
	if err := h.Moto.Reset(ctx); err != nil {
		return err
	}
	h.Shim.Reset()
	return nil
}

// Endpoints maps every service key of cloud.Config.Endpoints to the shim.
func (h *Harness) Endpoints() map[string]string {
	eps := map[string]string{}
	for _, s := range cloud.Services() {
		eps[s] = h.URL
	}
	return eps
}

// Env is the AWS SDK environment pointing at the harness: dummy
// credentials, the test region, AWS_ENDPOINT_URL (so nothing can reach real
// AWS even without an endpoints block), no shared config or instance
// metadata, and the provider's waits polling at the emulator's pace
// (MLPLATFORM_POLL_INTERVAL).
func (h *Harness) Env() map[string]string {
	return awsEnv(h.URL)
}

// awsEnv is the AWS SDK environment for an endpoint: dummy credentials,
// the test region, no shared config or instance metadata, waits at the
// emulator's pace.
func awsEnv(endpoint string) map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID":           "testing",
		"AWS_SECRET_ACCESS_KEY":       "testing",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_REGION":                  Region,
		"AWS_DEFAULT_REGION":          Region,
		"AWS_ENDPOINT_URL":            endpoint,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		platform.PollIntervalEnv:      EmulatorPollInterval.String(),
	}
}

// Clients returns AWS clients for region that go through the shim, for a
// test to create fixtures with (a bucket in eu-west-1, a KMS key). Their
// calls are logged with Fixture set and left out of Shim.Writes. It needs
// the environment of Env (Setup sets it).
func (h *Harness) Clients(ctx context.Context, region string) (*cloud.Clients, error) {
	c, err := cloud.New(ctx, cloud.Config{Region: region, Endpoints: h.Endpoints(), UserAgent: fixtureAppID})
	if err != nil {
		return nil, fmt.Errorf("creating fixture clients: %w", err)
	}
	return c, nil
}

// AWSManagedKeys is the residency setting (for ProviderConfig's extra
// lines) of a test that is not about keys: it accepts AWS managed keys,
// which jurisdiction AE refuses by default (require_customer_managed_keys
// defaults to true there). A test asks for it by name; tests about keys and
// residency keep the default, so that key-less configurations are refused.
const AWSManagedKeys = "require_customer_managed_keys = false"

// ProviderConfig returns a provider "mlplatform" block for region
// me-central-1 with every endpoint at the shim and residency jurisdiction
// "AE". extraResidencyHCL is added inside the residency block, for example
// `excluded_zone_ids = ["mec1-az2"]`.
func (h *Harness) ProviderConfig(extraResidencyHCL string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider \"mlplatform\" {\n  region = %q\n\n  endpoints {\n", Region)
	services := cloud.Services()
	slices.Sort(services)
	width := 0
	for _, s := range services {
		width = max(width, len(s))
	}
	for _, s := range services {
		fmt.Fprintf(&b, "    %-*s = %q\n", width, s, h.URL)
	}
	b.WriteString("  }\n\n  residency {\n    jurisdiction = \"AE\"\n")
	for line := range strings.SplitSeq(strings.TrimSpace(extraResidencyHCL), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			b.WriteString("    " + line + "\n")
		}
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

// suite is the pool of harnesses of one test binary: each acceptance test
// takes one for itself (Setup), so tests run in parallel without sharing
// emulator state, and gives it back, to be reset, when it ends. Harnesses
// start when first needed, up to the pool's size; Main stops them after
// the tests.
type suite struct {
	size   int
	refuse *refusingEndpoint

	mu       sync.Mutex
	idle     []*Harness
	all      []*Harness // started
	starting int        // being started
	freed    *sync.Cond
	byTest   map[string]*Harness // the harness each running test holds

	envOnce sync.Once
	envErr  error
	tfPath  string
}

func newSuite(size int) *suite {
	s := &suite{size: max(size, 1), byTest: map[string]*Harness{}}
	s.freed = sync.NewCond(&s.mu)
	return s
}

// acquire takes an idle harness, starts one when the pool is not full, or
// waits for one to be released.
func (s *suite) acquire(ctx context.Context) (*Harness, error) {
	s.mu.Lock()
	for len(s.idle) == 0 && len(s.all)+s.starting >= s.size {
		s.freed.Wait()
	}
	if n := len(s.idle); n > 0 {
		h := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return h, nil
	}
	s.starting++
	s.mu.Unlock()
	h, err := Start(ctx, Options{})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starting--
	if err != nil {
		s.freed.Signal() // its place is free again
		return nil, err
	}
	s.all = append(s.all, h)
	return h, nil
}

// release gives h back to the pool.
func (s *suite) release(h *Harness) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle = append(s.idle, h)
	s.freed.Signal()
}

func (s *suite) hold(name string, h *Harness) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		delete(s.byTest, name)
		return
	}
	s.byTest[name] = h
}

func (s *suite) held(name string) *Harness {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byTest[name]
}

// environment sets, once for the whole test binary, the environment every
// acceptance test shares: Terraform's (found, or installed, here) and the
// AWS SDK's (constants: dummy credentials, the test region, no shared
// config; AWS_ENDPOINT_URL points at a closed loopback port, so a client
// that was not given its test's emulator fails at once and never reaches
// AWS). Nothing in it differs between tests: what does (the endpoints)
// travels in each test's provider block and clients.
func (s *suite) environment() (string, error) {
	s.envOnce.Do(func() {
		if err := s.environmentAWS(); err != nil {
			s.envErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		if s.tfPath, s.envErr = FindTerraform(ctx); s.envErr != nil {
			return
		}
		for k, v := range TerraformEnv(s.tfPath) {
			if err := os.Setenv(k, v); err != nil {
				s.envErr = err
				return
			}
		}
	})
	return s.tfPath, s.envErr
}

func (s *suite) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, h := range s.all {
		errs = append(errs, h.Stop())
	}
	s.all, s.idle = nil, nil
	return errors.Join(errs...)
}

// current is the suite of this test binary, set by Main.
var current atomic.Pointer[suite]

// Main runs the tests of a package that uses the harness and exits:
//
//	func TestMain(m *testing.M) { acctest.Main(m) }
//
// Emulators start with the first Setup, so packages whose tests do not
// call it pay nothing, and stop after the last test. The pool holds as
// many emulators as tests may run at once (go test -parallel), or
// $ACCTEST_EMULATORS.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse() // testing's flags, -test.parallel among them
	size := runtime.GOMAXPROCS(0)
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			size = n
		}
	}
	if v := os.Getenv("ACCTEST_EMULATORS"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			size = n
		}
	}
	// Waits poll the emulator every EmulatorPollInterval, not at the
	// intervals meant for AWS; $MLPLATFORM_POLL_INTERVAL, when set, wins.
	if os.Getenv(platform.PollIntervalEnv) == "" {
		if err := os.Setenv(platform.PollIntervalEnv, EmulatorPollInterval.String()); err != nil {
			fmt.Fprintf(os.Stderr, "acctest: %v\n", err)
			return 2
		}
	}
	// The provider servers tests run in this process log their protocol
	// traffic at trace level to the process's stderr, which go test hands
	// to whichever test runs: off, unless a developer asks for it.
	for _, k := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"} {
		if _, set := os.LookupEnv(k); !set {
			if err := os.Setenv(k, "OFF"); err != nil {
				fmt.Fprintf(os.Stderr, "acctest: %v\n", err)
				return 2
			}
		}
	}
	s := newSuite(size)
	refuse, err := startRefusingEndpoint()
	if err != nil {
		fmt.Fprintf(os.Stderr, "acctest: %v\n", err)
		return 2
	}
	defer refuse.srv.Close()
	s.refuse = refuse
	current.Store(s)
	code := m.Run()
	if err := s.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "acctest: %v\n", err)
	}
	current.Store(nil)
	return code
}

// Setup prepares an acceptance test and makes it parallel (t.Parallel): it
// takes an emulator of its own from the pool (reset, so it starts empty),
// finds (or installs) Terraform, and prints the shim's request log and
// moto's log if the test fails. The environment it needs is the same for
// every test and set once (see suite.environment); the test's emulator is
// reached through h.ProviderConfig, h.Endpoints and h.Clients, never
// through the environment. A test that must change the process
// environment (t.Setenv) calls SetupSerial.
//
// Without moto_server the test is skipped, or fails when $CI is set.
func Setup(t *testing.T) *Harness {
	t.Helper()
	if os.Getenv("TF_ACC") != "" {
		t.Parallel()
	}
	return setup(t, false, true)
}

// SetupSerial is Setup for a test that does not run in parallel with
// others: one that sets environment variables, or whose configuration
// reaches the emulator through AWS_ENDPOINT_URL (which it sets for the
// test's duration, t.Setenv) rather than a provider block.
func SetupSerial(t testing.TB) *Harness {
	t.Helper()
	h := setup(t, true, true)
	return h
}

// SetupEmulator is SetupSerial without Terraform, for tests that only
// need the emulator (Pulumi engine tests, tests of internal/cloud).
func SetupEmulator(t testing.TB) *Harness {
	t.Helper()
	return setup(t, true, false)
}

// ParallelGroup makes t a parallel test whose subtests each call Setup
// (or ParallelEmulator) for an emulator of their own: t itself holds none.
// Without TF_ACC it is skipped, as Setup would.
func ParallelGroup(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 to run it against the AWS emulator (make testacc, make test)")
	}
	t.Parallel()
}

// ParallelEmulator is SetupEmulator for a parallel test (t.Parallel): its
// own emulator, reached through explicit endpoints (a Pulumi provider's
// config, h.Clients), and no change to the environment.
func ParallelEmulator(t *testing.T) *Harness {
	t.Helper()
	if os.Getenv("TF_ACC") != "" {
		t.Parallel()
	}
	return setup(t, false, false)
}

// sharedAWSEnv is the AWS SDK environment every test shares. Its
// AWS_ENDPOINT_URL is the suite's refusing endpoint: a client that was not
// given its test's emulator fails there at once, and never reaches AWS.
func (s *suite) sharedAWSEnv() map[string]string {
	env := awsEnv(s.refuse.URL)
	delete(env, platform.PollIntervalEnv) // Main sets it, unless the caller did
	return env
}

// EmulatorPollInterval is how often waits poll the emulator in tests:
// moto answers at once and has everything ACTIVE at once, so a wait meant
// for AWS (15 s between looks at EC2 nodes or validation reports) would
// only sleep. Not shorter: every look costs moto CPU, and the node player
// looks for new nodes every 500 ms.
const EmulatorPollInterval = 500 * time.Millisecond

// refusingEndpoint answers every request with 400 and an AWS error naming
// the mistake: a test whose client was not pointed at its own emulator.
// (A closed port would do too, but the SDK retries a refused connection
// for minutes.)
type refusingEndpoint struct {
	URL string
	srv *http.Server
}

func startRefusingEndpoint() (*refusingEndpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the refusing endpoint: %w", err)
	}
	const msg = "this request reached AWS_ENDPOINT_URL, which the acceptance tests share: give the client its test's emulator (h.ProviderConfig, h.Endpoints, h.Clients) or call acctest.SetupSerial"
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, hr *http.Request) {
		body, _ := io.ReadAll(hr.Body)
		// In the protocol of the service asked (EC2's, query, JSON, S3's), so
		// the client's error names the mistake.
		WriteAWSError(w, parseRequest(hr, body), http.StatusBadRequest, "NoEmulatorForThisTest", msg)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &refusingEndpoint{URL: "http://" + ln.Addr().String(), srv: srv}, nil
}

// setup sets the shared environment (Terraform's too, when terraform is
// true), takes an emulator from the pool for t, resets it, and gives it
// back when t ends. A serial test also gets AWS_ENDPOINT_URL pointing at
// it for its duration: set last, so that nothing shared overwrites it.
func setup(t testing.TB, serial, terraform bool) *Harness {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 to run it against the AWS emulator (make testacc, make test)")
	}
	s := current.Load()
	if s == nil {
		t.Fatal("acctest: the harness is not set up; add func TestMain(m *testing.M) { acctest.Main(m) } to this test package")
	}
	if _, err := motoCommand(""); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("skipping: %v", err)
		}
		t.Fatalf("starting the AWS emulator: %v", err)
	}
	if err := s.environmentAWS(); err != nil {
		t.Fatal(err)
	}
	if terraform {
		if _, err := s.environment(); err != nil {
			t.Fatalf("finding terraform: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, err := s.acquire(ctx)
	if err != nil {
		t.Fatalf("starting the AWS emulator: %v", err)
	}
	s.hold(t.Name(), h)
	t.Cleanup(func() {
		s.hold(t.Name(), nil)
		s.release(h)
	})
	if serial {
		t.Setenv("AWS_ENDPOINT_URL", h.URL)
	}
	if err := h.Reset(ctx); err != nil {
		t.Fatalf("resetting the AWS emulator: %v", err)
	}
	offset := h.Moto.LogOffset()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var b strings.Builder
		for _, c := range h.Shim.Log() {
			b.WriteString(c.String() + "\n")
		}
		t.Logf("shim request log (%s):\n%s", h.URL, b.String())
		t.Logf("moto log (%s):\n%s", h.Moto.URL, h.Moto.LogSince(offset))
	})
	return h
}

// environmentAWS sets the shared AWS environment once (Terraform's is set
// by environment, which Setup calls).
func (s *suite) environmentAWS() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.sharedAWSEnv() {
		if os.Getenv(k) == v {
			continue
		}
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}

// PreCheck checks that Setup ran for this test and its emulator answers.
// Use it as the TestCase's PreCheck: func() { acctest.PreCheck(t) }. It
// does not reset anything, so fixtures created after Setup survive.
func PreCheck(t testing.TB) {
	t.Helper()
	h := Of(t)
	if h == nil {
		t.Fatal("acctest: call acctest.Setup(t) at the start of the test")
	}
	for _, k := range []string{"TF_ACC", "TF_ACC_TERRAFORM_PATH", "AWS_ACCESS_KEY_ID", "AWS_REGION"} {
		if os.Getenv(k) == "" {
			t.Fatalf("acctest: %s is not set; call acctest.Setup(t) at the start of the test", k)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := healthy(ctx, h.URL); err != nil {
		t.Fatalf("acctest: the emulator does not answer: %v", err)
	}
}

// Of returns the harness test t (or the test it is a subtest of) holds,
// or nil when it called no Setup.
func Of(t testing.TB) *Harness {
	s := current.Load()
	if s == nil {
		return nil
	}
	for name := t.Name(); ; {
		if h := s.held(name); h != nil {
			return h
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return nil
		}
		name = name[:i]
	}
}

// EC2 is the EC2 SDK client of c, for a test's own calls (the clients hold
// their SDK clients behind handles that forward only what the core calls).
func EC2(c *cloud.Clients) *ec2.Client { return cloud.EC2SDK(c.EC2) }

// SecretsManager is the Secrets Manager SDK client of c, for a test's own
// calls (creating a secret).
func SecretsManager(c *cloud.Clients) *secretsmanager.Client {
	return cloud.SecretsManagerSDK(c.SecretsManager())
}
