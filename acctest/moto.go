package acctest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrMotoNotFound is returned by StartMoto when the moto_server executable
// cannot be found.
var ErrMotoNotFound = errors.New("moto_server not found on PATH: install it with pip install 'moto[server]' (or set MOTO_SERVER to its path)")

// MotoOptions configures StartMoto. The zero value is ready to use.
type MotoOptions struct {
	// Command is the moto_server executable. Default: $MOTO_SERVER, else
	// moto_server on PATH.
	Command string
	// Port to listen on (loopback only). Default: a free port.
	Port int
	// StartTimeout bounds the wait for /moto-api/ to answer. Default 60s.
	StartTimeout time.Duration
	// LogOutput, when set, also receives moto's output as it is written.
	LogOutput io.Writer
}

// Moto is a running moto_server process on a loopback port. Its output is
// kept in memory (the most recent part) so that a failing test can print it.
type Moto struct {
	// URL is the base URL, for example http://127.0.0.1:54321.
	URL string

	cmd    *exec.Cmd
	log    *logBuffer
	exited chan struct{}
	// waitErr is the result of cmd.Wait, valid once exited is closed.
	waitErr  error
	stopOnce sync.Once
}

// StartMoto starts moto_server and waits until its /moto-api/ endpoint
// answers. It retries on a fresh port when the chosen one was taken.
func StartMoto(ctx context.Context, opts MotoOptions) (*Moto, error) {
	bin, err := motoCommand(opts.Command)
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	attempts := 3
	if opts.Port != 0 {
		attempts = 1
	}
	var lastErr error
	for range attempts {
		port := opts.Port
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, err
			}
		}
		m, err := startMoto(ctx, bin, port, opts)
		if err == nil {
			return m, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func motoCommand(name string) (string, error) {
	if name == "" {
		name = os.Getenv("MOTO_SERVER")
	}
	if name == "" {
		name = "moto_server"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrMotoNotFound, err)
	}
	return bin, nil
}

func startMoto(ctx context.Context, bin string, port int, opts MotoOptions) (*Moto, error) {
	m := &Moto{
		URL:    "http://127.0.0.1:" + strconv.Itoa(port),
		log:    newLogBuffer(4 << 20),
		exited: make(chan struct{}),
	}
	var out io.Writer = m.log
	if opts.LogOutput != nil {
		out = io.MultiWriter(m.log, opts.LogOutput)
	}
	// Not exec.CommandContext: the process outlives ctx, which only bounds
	// the start.
	m.cmd = exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	m.cmd.Stdout = out
	m.cmd.Stderr = out
	m.cmd.Env = append(motoEnv(os.Environ()), "PYTHONUNBUFFERED=1")
	setProcAttr(m.cmd)
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting moto_server: %w", err)
	}
	go func() {
		m.waitErr = m.cmd.Wait()
		close(m.exited)
	}()

	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := m.waitReady(ctx); err != nil {
		_ = m.Stop()
		return nil, fmt.Errorf("starting moto_server on port %d: %w\nmoto output:\n%s", port, err, m.log.Tail(4096))
	}
	return m, nil
}

func (m *Moto) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL+"/moto-api/", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			// Only this moto's own answer counts: the port was free when
			// it was picked, but another test's shim or moto may have been
			// given it since, and would answer /moto-api/ too (this moto
			// then fails to bind and exits). This moto says it listens.
			if resp.StatusCode == http.StatusOK && strings.Contains(m.log.String(), "Running on "+m.URL) {
				return nil
			}
		}
		select {
		case <-m.exited:
			return fmt.Errorf("moto_server exited early: %v", m.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s/moto-api/ to answer: %w", m.URL, ctx.Err())
		case <-tick.C:
		}
	}
}

// motoEnv is the environment moto runs with: the tests' own, less the AWS
// SDK's variables, which are for the clients (an empty AWS_PROFILE, for
// one, stops boto3 inside moto with ProfileNotFound).
func motoEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return out
}

// Done is closed when the moto process has exited.
func (m *Moto) Done() <-chan struct{} { return m.exited }

// Reset wipes all of moto's state (POST /moto-api/reset).
func (m *Moto) Reset(ctx context.Context) error {
	return motoReset(ctx, m.URL)
}

func motoReset(ctx context.Context, baseURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/moto-api/reset", nil)
	if err != nil {
		return fmt.Errorf("resetting moto: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("resetting moto: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("resetting moto: status %s", resp.Status)
	}
	return nil
}

// EnforceIAM makes moto check every request from now on against the IAM
// policies of the identity that signed it (POST /moto-api/reset-auth 0, as
// moto's own set_initial_no_auth_action_count does in server mode): a
// request signed with an access key of no IAM user is refused, and a user
// may do only what its policies allow. It is for a moto of a test's own
// (StartMoto), never one of the pool: the setting is the whole process's,
// and a reset (Reset) does not undo it. What moto evaluates, and what it
// does not, is described at TestIAMPolicies_enforcedByMoto.
func (m *Moto) EnforceIAM(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/moto-api/reset-auth", strings.NewReader("0"))
	if err != nil {
		return fmt.Errorf("enforcing IAM in moto: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("enforcing IAM in moto: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("enforcing IAM in moto: status %s", resp.Status)
	}
	return nil
}

// Log returns moto's output kept so far (the most recent 4 MiB).
func (m *Moto) Log() string { return m.log.String() }

// LogOffset returns the number of bytes moto has written so far; pass it to
// LogSince to get what was written after this point.
func (m *Moto) LogOffset() int64 { return m.log.Offset() }

// LogSince returns moto's output written after offset (as far as it is
// still kept).
func (m *Moto) LogSince(offset int64) string { return m.log.Since(offset) }

// Stop terminates moto (SIGTERM, then SIGKILL after 5s) and waits for it.
// It is safe to call more than once.
func (m *Moto) Stop() error {
	var err error
	m.stopOnce.Do(func() {
		select {
		case <-m.exited:
			return
		default:
		}
		_ = terminate(m.cmd)
		select {
		case <-m.exited:
		case <-time.After(5 * time.Second):
			_ = kill(m.cmd)
			<-m.exited
		}
		// moto exits with a signal status when terminated: that is the
		// expected outcome, not an error.
		var exitErr *exec.ExitError
		if m.waitErr != nil && !errors.As(m.waitErr, &exitErr) {
			err = fmt.Errorf("stopping moto_server: %w", m.waitErr)
		}
	})
	return err
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logBuffer keeps the last max bytes written to it and counts all of them.
type logBuffer struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64
}

func newLogBuffer(max int) *logBuffer { return &logBuffer{max: max} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func (b *logBuffer) Offset() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

func (b *logBuffer) Since(offset int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	start := int64(len(b.buf)) - (b.total - offset)
	prefix := ""
	if start < 0 {
		start = 0
		prefix = "[... earlier output dropped ...]\n"
	}
	if start > int64(len(b.buf)) {
		return ""
	}
	return prefix + string(b.buf[start:])
}

func (b *logBuffer) Tail(n int) string {
	s := b.String()
	if len(s) > n {
		s = s[len(s)-n:]
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}
