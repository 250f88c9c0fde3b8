package probe

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

	"github.com/mlplatform/mlplatform/hwprobe/identity"
)

// fakeIMDS serves IMDSv2: a token first, then metadata only with the token.
func fakeIMDS(t *testing.T, paths map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = w.Write([]byte("token-1"))
			return
		}
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") != "token-1" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, ok := paths[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func identityFixture(t *testing.T) (doc, sig string, certs []*x509.Certificate) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile("../identity/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	certs, err := identity.ParseCertificates([]byte(read("test-cert.pem")))
	if err != nil {
		t.Fatal(err)
	}
	return read("document.json"), read("rsa2048-attrs.txt"), certs
}

func TestCollectHost(t *testing.T) {
	doc, sig, certs := identityFixture(t)
	full := map[string]string{
		"/latest/meta-data/instance-id":                    "i-0123456789abcdef0",
		"/latest/meta-data/placement/availability-zone-id": "mec1-az1",
		"/latest/dynamic/instance-identity/document":       doc,
		"/latest/dynamic/instance-identity/rsa2048":        sig,
	}
	without := func(p string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			if k != p {
				m[k] = v
			}
		}
		return m
	}
	tests := []struct {
		name      string
		paths     map[string]string
		trusted   []*x509.Certificate
		verified  bool
		verifyErr string
		wantErr   bool
	}{
		{name: "verified", paths: full, trusted: certs, verified: true},
		{name: "no trusted certificate", paths: full, verifyErr: "no trusted"},
		{name: "no signature", paths: without("/latest/dynamic/instance-identity/rsa2048"), trusted: certs, verifyErr: "no rsa2048 signature"},
		{name: "no document", paths: without("/latest/dynamic/instance-identity/document"), trusted: certs, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeIMDS(t, tt.paths)
			t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
			t.Setenv("AWS_EC2_METADATA_DISABLED", "") // the caller's environment may disable it
			h, err := collectHost(context.Background(), NewIMDSClient(), tt.trusted)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !h.OnEC2 || h.InstanceID != "i-0123456789abcdef0" || h.ZoneID != "mec1-az1" {
				t.Fatalf("host = %+v", h)
			}
			if tt.wantErr {
				return
			}
			if h.Region != "me-central-1" || h.InstanceType != "p5en.48xlarge" || h.AccountID != "111122223333" || h.AvailabilityZone != "me-central-1a" {
				t.Errorf("host = %+v", h)
			}
			if h.Identity == nil || h.Identity.Document != doc || h.Identity.Verified != tt.verified ||
				!strings.Contains(h.Identity.VerifyError, tt.verifyErr) {
				t.Errorf("identity = %+v", h.Identity)
			}
		})
	}
}

// blackHoleIMDS is a metadata service that never answers: each request
// ends when its context does. It records the time each request had left.
type blackHoleIMDS struct {
	t     *testing.T
	calls int
	left  []time.Duration // per request; -1 for a request without a deadline
}

func (b *blackHoleIMDS) GetMetadata(ctx context.Context, _ *imds.GetMetadataInput, _ ...func(*imds.Options)) (*imds.GetMetadataOutput, error) {
	b.calls++
	left := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	b.left = append(b.left, left)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (b *blackHoleIMDS) GetDynamicData(context.Context, *imds.GetDynamicDataInput, ...func(*imds.Options)) (*imds.GetDynamicDataOutput, error) {
	b.t.Error("dynamic data asked of a metadata service that never answered")
	return nil, errors.New("unexpected")
}

// TestCollectHostOffEC2: off EC2 the link-local address does not answer,
// and the first request gives up at its own short deadline
// (imdsFirstTimeout), not the 3 s of the whole probe. That is judged
// without a stopwatch: the request carries a deadline at most
// imdsFirstTimeout away whatever the load, and no second request is made.
// The real client against a listener that accepts and never answers (a
// black-holed address) must then report the host as off EC2.
func TestCollectHostOffEC2(t *testing.T) {
	t.Run("first request deadline", func(t *testing.T) {
		c := &blackHoleIMDS{t: t}
		h, err := collectHost(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if h.OnEC2 || !strings.HasPrefix(h.Reason, "not on EC2") {
			t.Errorf("host = %+v", h)
		}
		if c.calls != 1 || c.left[0] < 0 || c.left[0] > imdsFirstTimeout {
			t.Errorf("%d requests, time left %v; want one request with at most %v left", c.calls, c.left, imdsFirstTimeout)
		}
	})
	t.Run("real client, black-holed endpoint", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://"+ln.Addr().String())
		t.Setenv("AWS_EC2_METADATA_DISABLED", "") // the caller's environment may disable it
		h, err := collectHost(context.Background(), NewIMDSClient(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if h.OnEC2 || !strings.HasPrefix(h.Reason, "not on EC2") {
			t.Errorf("host = %+v", h)
		}
	})
}

func TestCollectHostRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://"+addr)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "") // the caller's environment may disable it
	h, err := collectHost(context.Background(), NewIMDSClient(), nil)
	if err != nil || h.OnEC2 {
		t.Errorf("host = %+v, err = %v", h, err)
	}
}
