package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// fakeEC2Throttling is a test double of an EC2 endpoint (only the EC2 query
// protocol's envelope): it answers the first fail requests with status and
// code, then DescribeAvailabilityZones with one zone.
func fakeEC2Throttling(t *testing.T, fail int, status int, code string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		if int(n) <= fail {
			w.WriteHeader(status)
			fmt.Fprintf(w, `<Response><Errors><Error><Code>%s</Code><Message>injected</Message></Error></Errors><RequestID>r%d</RequestID></Response>`, code, n)
			return
		}
		fmt.Fprint(w, `<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>ok</requestId>`+
			`<availabilityZoneInfo><item><zoneName>me-central-1a</zoneName><zoneId>mec1-az1</zoneId><zoneState>available</zoneState></item></availabilityZoneInfo>`+
			`</DescribeAvailabilityZonesResponse>`)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func testClients(t *testing.T, endpoint string, l Limits) *Clients {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	c, err := New(context.Background(), Config{Region: "me-central-1", Endpoints: map[string]string{"ec2": endpoint, "s3": endpoint, "kms": endpoint, "sagemaker": endpoint, "ssm": endpoint, "sts": endpoint}, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Throttling and 5xx errors are retried beyond the SDK's default of 3
// attempts, on every client, regional copies included. (Adaptive mode slows
// the client down after throttling: the throttling case takes ~15s.)
func TestClientsRetryThrottlingAnd5xx(t *testing.T) {
	for _, tt := range []struct {
		status int
		code   string
	}{
		{http.StatusServiceUnavailable, "RequestLimitExceeded"},
		{http.StatusInternalServerError, "InternalError"},
	} {
		t.Run(tt.code, func(t *testing.T) {
			// 4 failures: more than the SDK's default 3 attempts absorb.
			srv, calls := fakeEC2Throttling(t, 4, tt.status, tt.code)
			c := testClients(t, srv.URL, Limits{MaxBackoff: 20 * time.Millisecond})
			zones, err := FindZones(context.Background(), c.EC2)
			if err != nil {
				t.Fatalf("4 x %s then success: %v", tt.code, err)
			}
			if len(zones) != 1 || calls.Load() != 5 {
				t.Errorf("zones %v after %d calls, want 1 zone after 5 calls", zones, calls.Load())
			}
			// The regional copy keeps the retry budget.
			calls.Store(0)
			if _, err := FindZones(context.Background(), c.ForRegion("eu-west-1").EC2); err != nil {
				t.Fatalf("regional client: %v", err)
			}
		})
	}
}

// The retry budget is bounded: a call that is throttled without end fails
// after MaxAttempts, and within the caller's deadline.
func TestClientsRetryBounded(t *testing.T) {
	srv, calls := fakeEC2Throttling(t, 1<<30, http.StatusServiceUnavailable, "RequestLimitExceeded")
	c := testClients(t, srv.URL, Limits{MaxAttempts: 4, MaxBackoff: 10 * time.Millisecond})
	if _, err := FindZones(context.Background(), c.EC2); err == nil || calls.Load() != 4 {
		t.Fatalf("err = %v after %d calls, want an error after 4", err, calls.Load())
	}
	c = testClients(t, srv.URL, Limits{MaxAttempts: 1000, MaxBackoff: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := FindZones(ctx, c.EC2); err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %s, want an error within the caller's deadline", err, time.Since(start))
	}
}

// An endpoint that accepts the connection and never answers fails the call
// within the limits, with an error that says so.
func TestClientsTimeoutOnSilentEndpoint(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			t.Cleanup(func() { c.Close() }) // held open, never answered
		}
	}()
	c := testClients(t, "http://"+l.Addr().String(), Limits{ResponseTimeout: 200 * time.Millisecond, OperationTimeout: 1500 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	start := time.Now()
	_, err = c.EC2.DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{})
	took := time.Since(start)
	if err == nil {
		t.Fatal("a silent endpoint answered")
	}
	if took > 5*time.Second {
		t.Errorf("the call took %s, want about the 1.5s limit", took)
	}
	var te *CallTimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "no answer within 1.5s") || te.Operation != "DescribeAvailabilityZones" {
		t.Errorf("err = %v, want a *CallTimeoutError naming the operation and the limit", err)
	}
	if conns.Load() < 2 {
		t.Errorf("%d connections: a timed-out attempt should be retried", conns.Load())
	}
}

func TestDefaultLimits(t *testing.T) {
	l := Limits{}.withDefaults()
	if l != DefaultLimits() || l.MaxAttempts <= 3 || l.ResponseTimeout <= 0 || l.OperationTimeout < l.ResponseTimeout {
		t.Errorf("defaults %+v", l)
	}
}
