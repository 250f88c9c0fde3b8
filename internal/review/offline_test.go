package review

import (
	"go/parser"
	"go/token"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// trap is a loopback listener that counts every connection made to it.
type trap struct {
	ln    net.Listener
	conns atomic.Int64
}

func newTrap(t *testing.T) *trap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.conns.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return tr
}

func (tr *trap) url() string { return "http://" + tr.ln.Addr().String() }

// TestOffline runs the built binary on every fixture with every proxy and
// AWS endpoint variable pointing at a trap: no connection may arrive. The
// control request shows that a program that does use the network would
// be caught.
func TestOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "mlplatform")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mlplatform/mlplatform/cmd/mlplatform").CombinedOutput(); err != nil {
		t.Fatalf("building mlplatform: %v\n%s", err, out)
	}
	tr := newTrap(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_KMS", "AWS_ENDPOINT_URL_SAGEMAKER", "AWS_EC2_METADATA_SERVICE_ENDPOINT"} {
		env = append(env, k+"="+tr.url())
	}
	env = append(env, "AWS_ACCESS_KEY_ID=trap", "AWS_SECRET_ACCESS_KEY=trap", "AWS_REGION=me-central-1", "NO_PROXY=", "no_proxy=")
	for _, name := range fixtures {
		for _, format := range []string{"markdown", "json"} {
			cmd := exec.Command(bin, "review", "--format", format, "--fail-on", "residency,destroy-stateful,cost-increase>500", "--jurisdiction", "AE", filepath.Join("testdata", "plans", name+".json"))
			cmd.Env = env
			out, err := cmd.Output()
			if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != ExitPolicyFailed) {
				t.Fatalf("%s %s: %v", name, format, err)
			}
			if len(out) == 0 {
				t.Errorf("%s %s: no output", name, format)
			}
		}
	}
	time.Sleep(100 * time.Millisecond) // let a late connection land
	if n := tr.conns.Load(); n != 0 {
		t.Fatalf("the review made %d network connection(s)", n)
	}
	// Control: a client that honours the same proxy variables is caught.
	proxy, _ := url.Parse(tr.url())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 2 * time.Second}
	if resp, err := c.Get("http://sagemaker.me-central-1.amazonaws.com/"); err == nil {
		_ = resp.Body.Close()
	}
	if tr.conns.Load() == 0 {
		t.Fatal("control: the trap did not see a proxied request, so the check above proves nothing")
	}
}

// TestNoNetworkImports checks by construction: internal/review imports no
// AWS SDK, no internal/cloud and no network package, and never loads live
// catalog data.
func TestNoNetworkImports(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	cmds, _ := filepath.Glob(filepath.Join("..", "..", "cmd", "mlplatform", "*.go"))
	files = append(files, cmds...)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "net" || strings.HasPrefix(p, "net/") || strings.HasPrefix(p, "github.com/aws/") || strings.HasSuffix(p, "/internal/cloud") || p == "os/exec" {
				t.Errorf("%s imports %s", f, p)
			}
		}
		if strings.Contains(string(src), "catalog.Load(") {
			t.Errorf("%s loads live catalog data", f)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("checked %d files: the glob found too few", checked)
	}
}
