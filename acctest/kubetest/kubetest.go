// Package kubetest starts a real Kubernetes control plane for tests: etcd,
// kube-apiserver and kube-scheduler as their own processes (Kubernetes
// v1.34.4, etcd v3.6.4, built by scripts/kube-bins.sh), run through
// controller-runtime's envtest. The apiserver authorizes with
// Node,RBAC and admits with NodeRestriction, as EKS's does, so what a
// kubelet's identity may do to a Node is what a real cluster allows, and the
// scheduler honours taints as a real one does. Nothing is faked: the tests
// talk to the apiserver with client-go.
//
// EKS's token authentication is there too (TokenWebhook, MotoSTS): a token
// presigned for STS GetCallerIdentity is checked and replayed as
// aws-iam-authenticator does, to moto.
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Version is the Kubernetes release the control plane runs.
const Version = "v1.34.4"

// InstallHint is how to get the binaries the control plane runs.
const InstallHint = "run scripts/kube-bins.sh (builds kube-apiserver, kube-scheduler and etcd once, about 12 minutes on two cores; set KUBE_BIN_DIR to use binaries elsewhere)"

// StartTimeout bounds the start of the control plane, from etcd to a ready
// kube-scheduler: generous, for a loaded two-core machine (it takes about 5
// seconds on an idle one).
const StartTimeout = 2 * time.Minute

// binaries are the programs the control plane runs, in BinDir.
var binaries = []string{"etcd", "kube-apiserver", "kube-scheduler"}

// BinDir is the directory of the control plane's binaries: $KUBE_BIN_DIR,
// else mlplatform/kube-v1.34.4 in the user's cache directory, where
// scripts/kube-bins.sh builds them.
func BinDir() string {
	if d := os.Getenv("KUBE_BIN_DIR"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "mlplatform", "kube-"+Version)
}

// Missing says why no control plane can start here, or "".
func Missing() string {
	dir := BinDir()
	if dir == "" {
		return "no user cache directory and KUBE_BIN_DIR is not set: " + InstallHint
	}
	var missing []string
	for _, b := range binaries {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("no Kubernetes control plane in %s (%s not found): %s", dir, strings.Join(missing, ", "), InstallHint)
	}
	return ""
}

// Require skips t when no control plane can start here and CI is not set,
// and fails it when CI is set: CI builds the binaries (scripts/test.sh,
// step kube-bins).
func Require(t testing.TB) {
	t.Helper()
	why := Missing()
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI: %s", why)
		return
	}
	t.Skipf("skipping: %s", why)
}

// Option changes what Start starts.
type Option func(*options)

type options struct {
	scheduler bool
	webhook   *TokenWebhook
	args      map[string][]string
}

// WithoutScheduler starts no kube-scheduler: Pods stay unbound.
func WithoutScheduler() Option { return func(o *options) { o.scheduler = false } }

// WithTokenWebhook makes the apiserver authenticate bearer tokens through w
// (--authentication-token-webhook-config-file, API v1), as EKS's apiserver
// does through its authenticator, with a one-second cache of answers
// (--authentication-token-webhook-cache-ttl). Client certificates (Admin,
// User, NodeConfig) keep working beside it.
func WithTokenWebhook(w *TokenWebhook) Option { return func(o *options) { o.webhook = w } }

// WithAPIServerFlag sets a kube-apiserver flag (name without dashes),
// replacing what Start would set.
func WithAPIServerFlag(name string, values ...string) Option {
	return func(o *options) { o.args[name] = values }
}

// ControlPlane is a running etcd, kube-apiserver and (unless
// WithoutScheduler) kube-scheduler, stopped when the test that started it
// ends.
type ControlPlane struct {
	plane *envtest.ControlPlane
	admin *rest.Config
	logs  *tail
	dir   string // the test's scratch directory: kubeconfigs, certificates

	usersMu sync.Mutex // envtest's client CA is not safe for concurrent use
}

// Start starts etcd and kube-apiserver (--authorization-mode=Node,RBAC,
// --enable-admission-plugins=NodeRestriction) and, unless an option says
// otherwise, kube-scheduler with the identity system:kube-scheduler; it
// waits until they serve, and stops them with t.Cleanup. It skips or fails t
// as Require does when the binaries are missing. The processes' output is
// logged when t fails.
func Start(t testing.TB, opts ...Option) *ControlPlane {
	t.Helper()
	Require(t)
	o := options{scheduler: true, args: map[string][]string{}}
	for _, f := range opts {
		f(&o)
	}
	c := &ControlPlane{logs: newTail(1 << 20), dir: t.TempDir()}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane output (the last 64 KiB):\n%s", c.logs.Tail(64<<10))
		}
	})
	args := map[string][]string{
		"authorization-mode":       {"Node,RBAC"},
		"enable-admission-plugins": {"NodeRestriction"},
	}
	if w := o.webhook; w != nil {
		path := filepath.Join(c.dir, "token-webhook.kubeconfig")
		if err := w.writeConfig(path); err != nil {
			t.Fatal(err)
		}
		args["authentication-token-webhook-config-file"] = []string{path}
		args["authentication-token-webhook-version"] = []string{"v1"}
		args["authentication-token-webhook-cache-ttl"] = []string{"1s"}
	}
	for k, v := range o.args {
		args[k] = v
	}

	deadline := time.Now().Add(StartTimeout)
	if err := c.start(args, deadline); err != nil {
		t.Fatalf("starting etcd and kube-apiserver from %s: %v", BinDir(), err) // their output follows
	}
	t.Cleanup(func() {
		if err := c.plane.Stop(); err != nil {
			t.Errorf("stopping etcd and kube-apiserver: %v", err)
		}
	})
	if o.scheduler {
		s, err := c.startScheduler(t, deadline)
		if err != nil {
			t.Fatalf("starting kube-scheduler: %v", err) // its output follows
		}
		t.Cleanup(func() {
			if err := s.stop(); err != nil {
				t.Errorf("stopping kube-scheduler: %v", err)
			}
		})
	}
	return c
}

// start starts etcd and kube-apiserver, on fresh ports at each try (envtest
// picks free ports, which another process may take before they bind), until
// deadline; then it waits for the default namespace, which the apiserver
// makes shortly after it is healthy.
func (c *ControlPlane) start(args map[string][]string, deadline time.Time) error {
	dir := BinDir()
	var errs []error
	for try := 1; ; try++ {
		left := time.Until(deadline)
		if left <= 0 {
			return errors.Join(errs...)
		}
		plane := &envtest.ControlPlane{
			Etcd: &envtest.Etcd{
				Path:         filepath.Join(dir, "etcd"),
				StartTimeout: left,
				StopTimeout:  30 * time.Second,
				Out:          c.logs.Prefixed("etcd: "),
				Err:          c.logs.Prefixed("etcd: "),
			},
			APIServer: &envtest.APIServer{
				Path:         filepath.Join(dir, "kube-apiserver"),
				StartTimeout: left,
				StopTimeout:  30 * time.Second,
				Out:          c.logs.Prefixed("kube-apiserver: "),
				Err:          c.logs.Prefixed("kube-apiserver: "),
			},
		}
		// etcd's --unsafe-no-fsync: envtest sets it where etcd has it.
		flags := plane.APIServer.Configure()
		for k, v := range args {
			flags.Set(k, v...)
		}
		err := plane.Start()
		if err == nil {
			c.plane = plane
			break
		}
		errs = append(errs, fmt.Errorf("try %d: %w", try, err))
		if try == 3 {
			return errors.Join(errs...)
		}
	}
	admin, err := c.plane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		_ = c.plane.Stop()
		return fmt.Errorf("making the admin user: %w", err)
	}
	c.admin = admin.Config()
	if err := c.waitDefaultNamespace(deadline); err != nil {
		_ = c.plane.Stop()
		return err
	}
	return nil
}

func (c *ControlPlane) waitDefaultNamespace(deadline time.Time) error {
	cs, err := kubernetes.NewForConfig(c.Admin())
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, corev1.NamespaceDefault, metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the default namespace: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Admin returns a configuration of a cluster-admin (group system:masters),
// authenticated by a client certificate. Each call returns a copy.
func (c *ControlPlane) Admin() *rest.Config { return rest.CopyConfig(c.admin) }

// Endpoint returns the apiserver's https URL, with no trailing slash.
func (c *ControlPlane) Endpoint() string { return strings.TrimSuffix(c.admin.Host, "/") }

// CACert returns the PEM of the CA that signed the apiserver's serving
// certificate.
func (c *ControlPlane) CACert() []byte { return slices.Clone(c.plane.APIServer.SecureServing.CA) }

// User returns a configuration authenticated as name in groups (and
// system:authenticated, which the apiserver adds) by a client certificate
// the apiserver trusts. What it may do is what RBAC, the Node authorizer and
// admission give that identity.
func (c *ControlPlane) User(t testing.TB, name string, groups ...string) *rest.Config {
	t.Helper()
	c.usersMu.Lock()
	u, err := c.plane.AddUser(envtest.User{Name: name, Groups: groups}, &rest.Config{QPS: 100, Burst: 200})
	c.usersMu.Unlock()
	if err != nil {
		t.Fatalf("client certificate for %s: %v", name, err)
	}
	return rest.CopyConfig(u.Config())
}

// NodeConfig returns the identity a kubelet of node nodeName has: a client
// certificate with CN system:node:NAME and O system:nodes, which the Node
// authorizer and NodeRestriction recognise.
func (c *ControlPlane) NodeConfig(t testing.TB, nodeName string) *rest.Config {
	t.Helper()
	return c.User(t, "system:node:"+nodeName, "system:nodes")
}

// WriteKubeconfig writes a kubeconfig for cfg to path (mode 0600, its
// directory made as needed), with the CA, client certificate and key or
// bearer token embedded, as a kubelet's /var/lib/kubelet/kubeconfig holds
// them.
func (c *ControlPlane) WriteKubeconfig(t testing.TB, cfg *rest.Config, path string) {
	t.Helper()
	if err := writeKubeconfig(cfg, path); err != nil {
		t.Fatal(err)
	}
}

func writeKubeconfig(cfg *rest.Config, path string) error {
	kc, err := kubeconfig(cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig for %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// kubeconfig renders cfg with everything embedded; files cfg names are read.
func kubeconfig(cfg *rest.Config) (*clientcmdapi.Config, error) {
	read := func(data []byte, file string) ([]byte, error) {
		if len(data) > 0 || file == "" {
			return data, nil
		}
		return os.ReadFile(file)
	}
	ca, err := read(cfg.CAData, cfg.CAFile)
	if err != nil {
		return nil, err
	}
	crt, err := read(cfg.CertData, cfg.CertFile)
	if err != nil {
		return nil, err
	}
	key, err := read(cfg.KeyData, cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	token := cfg.BearerToken
	if token == "" && cfg.BearerTokenFile != "" {
		b, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return nil, err
		}
		token = strings.TrimSpace(string(b))
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubernetes"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: ca,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: crt,
		ClientKeyData:         key,
		Token:                 token,
	}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: "user"}
	kc.CurrentContext = "default"
	return kc, nil
}
