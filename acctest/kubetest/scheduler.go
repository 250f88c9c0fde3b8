package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// scheduler is a running kube-scheduler.
type scheduler struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // of cmd.Wait, once exited is closed
}

// startScheduler starts kube-scheduler as system:kube-scheduler (the user
// the default ClusterRoleBindings system:kube-scheduler and
// system:volume-scheduler bind), without leader election, serving its
// health endpoints on a loopback port with a certificate of its own, and
// waits until its /readyz answers (its informers synced) or deadline.
func (c *ControlPlane) startScheduler(t testing.TB, deadline time.Time) (*scheduler, error) {
	dir := filepath.Join(c.dir, "kube-scheduler")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.User(t, "system:kube-scheduler"), kubeconfig); err != nil {
		return nil, err
	}
	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	crtFile, keyFile := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	if err := os.WriteFile(crtFile, crt, 0o600); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)

	var errs []error
	for try := 1; try <= 3 && time.Now().Before(deadline); try++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(filepath.Join(BinDir(), "kube-scheduler"),
			"--kubeconfig="+kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port="+strconv.Itoa(port),
			"--tls-cert-file="+crtFile,
			"--tls-private-key-file="+keyFile,
			"--v=2", // one line per scheduling attempt and binding
		)
		out := c.logs.Prefixed("kube-scheduler: ")
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = procAttr()
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("running %s: %w", cmd.Path, err)
		}
		s := &scheduler{cmd: cmd, exited: make(chan struct{})}
		go func() {
			s.err = cmd.Wait()
			close(s.exited)
		}()
		err = s.waitReady("https://127.0.0.1:"+strconv.Itoa(port)+"/readyz", pool, deadline)
		if err == nil {
			return s, nil
		}
		_ = s.stop()
		errs = append(errs, fmt.Errorf("try %d: %w", try, err))
	}
	return nil, errors.Join(errs...)
}

func (s *scheduler) waitReady(url string, pool *x509.CertPool, deadline time.Time) error {
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		select {
		case <-s.exited:
			return fmt.Errorf("kube-scheduler exited before it was ready: %v", s.err)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last answer: %s)", url, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop terminates the scheduler (SIGTERM, SIGKILL after 10 seconds) and
// waits for it.
func (s *scheduler) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("kube-scheduler did not stop within 10s of SIGTERM; killed")
	}
	return nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
