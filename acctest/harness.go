// Package acctest is the acceptance-test harness: it runs moto (the AWS
// emulator) behind a shim that records every request and implements the few
// operations moto lacks, finds the Terraform CLI, and gives tests the
// provider factories, provider configuration and AWS clients to use them.
//
// A test package opts in with
//
//	func TestMain(m *testing.M) { acctest.Main(m) }
//
// and each acceptance test calls acctest.Setup(t) first. The emulator is
// shared by the tests of one test binary and reset by every Setup, so
// acceptance tests must not run in parallel (Setup uses t.Setenv, which
// enforces that).
package acctest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
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
	endpoints := RegisterSageMakerEndpoints(s)
	return &Harness{URL: s.URL, Moto: m, Shim: s, Refreshes: RegisterAutoScalingRefreshes(s), SageMakerEndpoints: endpoints}, nil
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
// AWS even without an endpoints block), and no shared config or instance
// metadata.
func (h *Harness) Env() map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID":           "testing",
		"AWS_SECRET_ACCESS_KEY":       "testing",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_REGION":                  Region,
		"AWS_DEFAULT_REGION":          Region,
		"AWS_ENDPOINT_URL":            h.URL,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
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

// suite is the harness shared by the tests of one test binary: started by
// the first Setup, stopped by Main after the tests.
type suite struct {
	once    sync.Once
	h       *Harness
	err     error
	started atomic.Pointer[Harness] // h, once started, for readers outside once

	tfOnce sync.Once
	tfPath string
	tfErr  error
}

func (s *suite) harness() (*Harness, error) {
	s.once.Do(func() {
		s.h, s.err = Start(context.Background(), Options{})
		if s.err == nil {
			s.started.Store(s.h)
		}
	})
	return s.h, s.err
}

func (s *suite) terraform() (string, error) {
	s.tfOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		s.tfPath, s.tfErr = FindTerraform(ctx)
	})
	return s.tfPath, s.tfErr
}

func (s *suite) stop() error {
	if h := s.started.Load(); h != nil {
		return h.Stop()
	}
	return nil
}

// current is the suite of this test binary, set by Main.
var current atomic.Pointer[suite]

// Main runs the tests of a package that uses the harness and exits:
//
//	func TestMain(m *testing.M) { acctest.Main(m) }
//
// The emulator starts with the first Setup, so packages whose tests do not
// call it pay nothing, and stops after the last test.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	s := &suite{}
	current.Store(s)
	code := m.Run()
	if err := s.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "acctest: %v\n", err)
	}
	current.Store(nil)
	return code
}

// Setup prepares an acceptance test: it starts the shared emulator if it is
// not running, finds (or installs) Terraform, sets the environment
// (TF_ACC=1, TF_ACC_TERRAFORM_PATH, CHECKPOINT_DISABLE, TF_IN_AUTOMATION and
// the AWS variables of Harness.Env), resets moto and the shim, and prints
// the shim's request log and moto's log if the test fails.
//
// Without moto_server the test is skipped, or fails when $CI is set.
func Setup(t testing.TB) *Harness {
	t.Helper()
	h := SetupEmulator(t)
	tf, err := current.Load().terraform()
	if err != nil {
		t.Fatalf("finding terraform: %v", err)
	}
	for k, v := range TerraformEnv(tf) {
		t.Setenv(k, v)
	}
	return h
}

// SetupEmulator is Setup without Terraform, for tests that only need the
// emulator (Pulumi engine tests, tests of internal/cloud).
func SetupEmulator(t testing.TB) *Harness {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 to run it against the AWS emulator (make testacc, make test)")
	}
	s := current.Load()
	if s == nil {
		t.Fatal("acctest: the harness is not set up; add func TestMain(m *testing.M) { acctest.Main(m) } to this test package")
	}
	h, err := s.harness()
	if errors.Is(err, ErrMotoNotFound) && os.Getenv("CI") == "" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatalf("starting the AWS emulator: %v", err)
	}
	for k, v := range h.Env() {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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

// PreCheck checks that Setup ran for this test and the emulator answers.
// Use it as the TestCase's PreCheck: func() { acctest.PreCheck(t) }. It
// does not reset anything, so fixtures created after Setup survive.
func PreCheck(t testing.TB) {
	t.Helper()
	h := startedHarness()
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

// ProviderConfig is Harness.ProviderConfig for the harness of this test
// binary; call Setup first.
func ProviderConfig(extraResidencyHCL string) string {
	h := startedHarness()
	if h == nil {
		panic("acctest.ProviderConfig: call acctest.Setup(t) first")
	}
	return h.ProviderConfig(extraResidencyHCL)
}

// startedHarness returns the harness of this test binary, or nil when no
// Setup has started it.
func startedHarness() *Harness {
	if s := current.Load(); s != nil {
		return s.started.Load()
	}
	return nil
}
