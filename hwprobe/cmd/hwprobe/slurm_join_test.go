package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

const joinRegion = "me-central-1"

// startJoinIMDS starts an IMDSv2 server: a token from PUT /latest/api/token,
// then GET /latest/meta-data/PATH with it; a path it lacks is 404.
func startJoinIMDS(t *testing.T, values map[string]string) {
	t.Helper()
	const token = "tok-123"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			if r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds") == "" {
				http.Error(w, "no TTL", http.StatusBadRequest)
				return
			}
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = w.Write([]byte(token))
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/latest/meta-data/"):
			if r.Header.Get("X-Aws-Ec2-Metadata-Token") != token {
				http.Error(w, "", http.StatusUnauthorized)
				return
			}
			p := strings.TrimPrefix(r.URL.Path, "/latest/meta-data/")
			v, ok := values[p]
			if !ok {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write([]byte(v))
		default:
			http.Error(w, "", http.StatusMethodNotAllowed)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
}

// The metadata of the fourth node of a launch request for nodes 4-6 and 9,
// and of a CPU footprint's instance.
func gpuNodeMetadata() map[string]string {
	return map[string]string{"instance-id": "i-0abc", "ami-launch-index": "3", "tags/instance/mlplatform:node-indices": "4-6,9"}
}

func joinConfig(t *testing.T, dir string, mutate func(*slurm.JoinConfig)) string {
	t.Helper()
	c := slurm.JoinConfig{
		Controllers:       []string{"ctl-a", "10.0.0.3:6817"},
		MungeKeySecretARN: "arn:aws:secretsmanager:me-central-1:123456789012:secret:munge-AbCdEf",
		Region:            joinRegion,
		NodeNamePrefix:    "train",
		NodeName:          slurm.NameByIndex,
		IndexTag:          "mlplatform:node-indices",
		Conf:              "Gres=gpu:h100:8 Feature=p5.48xlarge,H100,efa RealMemory=2000000",
	}
	if mutate != nil {
		mutate(&c)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "join.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type joinResult struct {
	code           int
	stdout, stderr string
}

func runJoin(t *testing.T, args ...string) joinResult {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb, os.Getenv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// No Slurm controller here: the first health check after slurmd
	// starts is the real-daemon tests' (acctest/slurmtest).
	err := run(ctx, append([]string{"slurm", "join", "--first-check=false"}, args...), a)
	return joinResult{code: exitStatus(err, &errb), stdout: out.String(), stderr: errb.String()}
}

func currentUser(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// TestSlurmJoinRefused: what stops the join before it reads a secret (so
// no Secrets Manager is needed), and --dry-run.
func TestSlurmJoinRefused(t *testing.T) {
	// No credentials: a secret read fails.
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	dir := t.TempDir()
	key := filepath.Join(dir, "munge", "munge.key")
	link := filepath.Join(dir, "sbin", healthCheckName)
	noStart := []string{"--no-start", "--munge-key", key, "--health-check-link", link}
	units := t.TempDir() // a systemd unit directory (nothing is written in a dry run)
	for _, tt := range []struct {
		name   string
		md     map[string]string
		mutate func(*slurm.JoinConfig)
		args   []string
		code   int
		want   string // in stderr; in stdout when code is 0
	}{
		{name: "no index tag", md: map[string]string{"instance-id": "i-0abc", "ami-launch-index": "0"}, args: noStart, code: exitCannotRun,
			want: "hwprobe: slurm join: instance tag mlplatform:node-indices: not in the instance metadata (the instance lacks the tag, or its launch template does not enable instance metadata tags)"},
		{name: "launch index past the tag's ranges", md: map[string]string{"instance-id": "i-0abc", "ami-launch-index": "4", "tags/instance/mlplatform:node-indices": "4-6,9"}, args: noStart, code: exitCannotRun,
			want: `hwprobe: slurm join: node name: tag mlplatform:node-indices = "4-6,9" has no entry for launch index 4`},
		{name: "no instance metadata", md: nil, args: noStart, code: exitCannotRun, want: "hwprobe: slurm join: instance metadata instance-id:"},
		{name: "bad configuration", md: gpuNodeMetadata(), mutate: func(c *slurm.JoinConfig) { c.Controllers = nil }, args: noStart, code: exitCannotRun,
			want: "join.json: slurm join configuration: controllers: at least one"},
		{name: "no slurmd", md: gpuNodeMetadata(), args: []string{"--slurmd", filepath.Join(dir, "none", "slurmd"), "--munge-key", key}, code: exitCannotRun,
			want: "hwprobe: slurm join: slurmd not found at " + filepath.Join(dir, "none", "slurmd") + ": the image must have Slurm's slurmd and munge installed"},
		{name: "no systemctl", md: gpuNodeMetadata(), args: []string{"--slurmd", os.Args[0], "--systemctl", filepath.Join(dir, "none", "systemctl"), "--munge-key", key}, code: exitCannotRun,
			want: "hwprobe: slurm join: systemctl not found at " + filepath.Join(dir, "none", "systemctl") + ": slurmd is started through systemd (or give --no-start and start it yourself)"},
		{name: "secret unreadable", md: gpuNodeMetadata(), args: noStart, code: exitCannotRun,
			want: "hwprobe: slurm join: munge key secret arn:aws:secretsmanager:me-central-1:123456789012:secret:munge-AbCdEf: operation error Secrets Manager: GetSecretValue, get identity: get credentials"},
		{name: "dry run", md: gpuNodeMetadata(), args: append([]string{"--dry-run"}, noStart...), code: exitOK,
			want: "node train-9 (instance i-0abc): dry run, nothing read from Secrets Manager, nothing written\n" +
				"would write the munge key from arn:aws:secretsmanager:me-central-1:123456789012:secret:munge-AbCdEf to " + key + " (mode 0400, owner munge)\n" +
				"would link " + link + " -> " + executable(t) + "\n" +
				"slurmd -Z --conf-server ctl-a,10.0.0.3:6817 -N train-9 --conf 'Gres=gpu:h100:8 Feature=p5.48xlarge,H100,efa RealMemory=2000000'\n"},
		{name: "dry run, starting", md: map[string]string{"instance-id": "i-0def"}, mutate: func(c *slurm.JoinConfig) { c.NodeName, c.NodeNamePrefix = slurm.NameByInstance, "cpu" },
			args: []string{"--dry-run", "--slurmd", os.Args[0], "--systemctl", os.Args[0], "--munge-key", key, "--health-check-link", "",
				"--slurmd-env", filepath.Join(dir, "slurmd") + "," + filepath.Join(dir, "none", "slurmd"), "--systemd-dir", filepath.Join(dir, "none")}, code: exitOK,
			want: "node cpu-i-0def (instance i-0def): dry run, nothing read from Secrets Manager, nothing written\n" +
				"would write the munge key from arn:aws:secretsmanager:me-central-1:123456789012:secret:munge-AbCdEf to " + key + " (mode 0400, owner munge)\n" +
				"would set in " + filepath.Join(dir, "slurmd") + `: SLURMD_OPTIONS="-Z --conf-server ctl-a,10.0.0.3:6817 -N cpu-i-0def --conf 'Gres=gpu:h100:8 Feature=p5.48xlarge,H100,efa RealMemory=2000000'"` + "\n" +
				"would run: systemctl restart munge; systemctl enable slurmd; systemctl restart slurmd\n" +
				"slurmd -Z --conf-server ctl-a,10.0.0.3:6817 -N cpu-i-0def --conf 'Gres=gpu:h100:8 Feature=p5.48xlarge,H100,efa RealMemory=2000000'\n"},
		{name: "dry run, starting, with systemd units", md: map[string]string{"instance-id": "i-0def"}, mutate: func(c *slurm.JoinConfig) { c.NodeName, c.NodeNamePrefix = slurm.NameByInstance, "cpu" },
			args: []string{"--dry-run", "--slurmd", os.Args[0], "--systemctl", os.Args[0], "--munge-key", key, "--health-check-link", "",
				"--slurmd-env", filepath.Join(dir, "none", "slurmd"), "--systemd-dir", units}, code: exitOK,
			want: "node cpu-i-0def (instance i-0def): dry run, nothing read from Secrets Manager, nothing written\n" +
				"would write the munge key from arn:aws:secretsmanager:me-central-1:123456789012:secret:munge-AbCdEf to " + key + " (mode 0400, owner munge)\n" +
				"would write " + filepath.Join(units, "slurmd.service.d", "mlplatform-slurm-join.conf") + " (slurmd.service starts without a local slurm.conf)\n" +
				"would write " + filepath.Join(units, "mlplatform-slurm-leave.service") + " (the node leaves Slurm at shutdown: hwprobe slurm leave)\n" +
				"would run: systemctl daemon-reload; systemctl restart munge; systemctl enable slurmd; systemctl restart slurmd; systemctl enable --now mlplatform-slurm-leave.service\n" +
				"slurmd -Z --conf-server ctl-a,10.0.0.3:6817 -N cpu-i-0def --conf 'Gres=gpu:h100:8 Feature=p5.48xlarge,H100,efa RealMemory=2000000'\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.md != nil {
				startJoinIMDS(t, tt.md)
			} else {
				t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1")
			}
			r := runJoin(t, append([]string{"--config", joinConfig(t, t.TempDir(), tt.mutate)}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d: %s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.code == exitOK {
				if r.stdout != tt.want {
					t.Errorf("stdout\n%s\nwant\n%s", r.stdout, tt.want)
				}
			} else if !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("stderr %q, want one line with %q", r.stderr, tt.want)
			}
			for _, d := range []string{dir, units} {
				if ents, _ := os.ReadDir(d); len(ents) != 0 {
					t.Errorf("wrote %v", ents)
				}
			}
		})
	}
}

func executable(t *testing.T) string {
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startMoto starts moto_server, the AWS emulator, on a free port and
// points the AWS SDK's default configuration at it.
func startMoto(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("moto_server not on PATH, and CI needs it (pip install 'moto[server]')")
		}
		t.Skip("moto_server not on PATH (pip install 'moto[server]'): the join's Secrets Manager reads are not tested")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("moto_server log:\n%s", log.String())
		}
	})
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(endpoint + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("moto_server exited:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto_server did not answer on %s: %v", endpoint, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	return endpoint
}

// TestSlurmJoin joins against a real Secrets Manager (moto) and an IMDSv2
// server: the node's name, the munge key file, slurmd's options and the
// systemd steps.
func TestSlurmJoin(t *testing.T) {
	endpoint := startMoto(t)
	sm := secretsmanager.New(secretsmanager.Options{Region: joinRegion, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")})
	key := bytes.Repeat([]byte{0x00, 0xff, 'm', '\n'}, 32) // 128 bytes, not text
	secret := func(name string, in secretsmanager.CreateSecretInput) string {
		in.Name = aws.String(name)
		out, err := sm.CreateSecret(context.Background(), &in)
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	binary := secret("munge-bin", secretsmanager.CreateSecretInput{SecretBinary: key})
	text := secret("munge-b64", secretsmanager.CreateSecretInput{SecretString: aws.String(base64.StdEncoding.EncodeToString(key))})
	short := secret("munge-short", secretsmanager.CreateSecretInput{SecretString: aws.String(base64.StdEncoding.EncodeToString(key[:31]))})
	missing := strings.Replace(binary, "munge-bin", "munge-none", 1)
	me := currentUser(t)

	// checkKey: the key file holds key, mode 0400, owned by this user, and
	// nothing else was left in its directory.
	checkKey := func(t *testing.T, p string) {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, key) {
			t.Errorf("munge key %q, %v", b, err)
		}
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o400 {
			t.Fatalf("munge key mode %v, %v", st.Mode(), err)
		}
		if s, ok := st.Sys().(*syscall.Stat_t); ok && (int(s.Uid) != os.Getuid() || int(s.Gid) != os.Getgid()) {
			t.Errorf("munge key owned by %d:%d", s.Uid, s.Gid)
		}
		if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
			t.Errorf("left in the key's directory: %v", ents)
		}
	}

	t.Run("no-start", func(t *testing.T) {
		for _, tt := range []struct {
			name, arn string
			md        map[string]string
			mutate    func(*slurm.JoinConfig)
			node      string
		}{
			{"by index, binary secret", binary, gpuNodeMetadata(), nil, "train-9"},
			{"by index, base64 secret", text, map[string]string{"instance-id": "i-0abc", "ami-launch-index": "0", "tags/instance/mlplatform:node-indices": "4-6,9"}, nil, "train-4"},
			{"by instance", binary, map[string]string{"instance-id": "i-0123456789abcdef0"}, func(c *slurm.JoinConfig) {
				c.NodeName, c.NodeNamePrefix, c.IndexTag, c.Conf = slurm.NameByInstance, "cpu", "", "Feature=c7i.large RealMemory=3500"
			}, "cpu-i-0123456789abcdef0"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				startJoinIMDS(t, tt.md)
				dir := t.TempDir()
				cfg := joinConfig(t, dir, func(c *slurm.JoinConfig) {
					c.MungeKeySecretARN = tt.arn
					if tt.mutate != nil {
						tt.mutate(c)
					}
				})
				keyPath := filepath.Join(dir, "munge", "munge.key")
				link := filepath.Join(dir, "sbin", healthCheckName)
				r := runJoin(t, "--config", cfg, "--no-start", "--munge-key", keyPath, "--munge-user", me, "--health-check-link", link)
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				var got struct {
					NodeName   string   `json:"node_name"`
					SlurmdArgs []string `json:"slurmd_args"`
				}
				dec := json.NewDecoder(strings.NewReader(r.stdout))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&got); err != nil || strings.Count(r.stdout, "\n") != 1 {
					t.Fatalf("stdout %q: %v", r.stdout, err)
				}
				conf := "Gres=gpu:h100:8 Feature=p5.48xlarge,H100,efa RealMemory=2000000"
				if tt.mutate != nil {
					conf = "Feature=c7i.large RealMemory=3500"
				}
				want := []string{"-Z", "--conf-server", "ctl-a,10.0.0.3:6817", "-N", tt.node, "--conf", conf}
				if got.NodeName != tt.node || !reflect.DeepEqual(got.SlurmdArgs, want) {
					t.Errorf("got %+v, want %s %q", got, tt.node, want)
				}
				checkKey(t, keyPath)
				if target, err := os.Readlink(link); err != nil || target != executable(t) {
					t.Errorf("link to %q, %v", target, err)
				}
				if bytes.Contains([]byte(r.stdout+r.stderr), []byte(base64.StdEncoding.EncodeToString(key))) {
					t.Error("the key was printed")
				}
			})
		}
	})

	t.Run("replaces a key atomically", func(t *testing.T) {
		startJoinIMDS(t, gpuNodeMetadata())
		dir := t.TempDir()
		keyPath := filepath.Join(dir, "munge.key")
		if err := os.WriteFile(keyPath, []byte("an old key, readable by all"), 0o644); err != nil {
			t.Fatal(err)
		}
		old, err := os.Open(keyPath)
		if err != nil {
			t.Fatal(err)
		}
		defer old.Close()
		cfg := joinConfig(t, t.TempDir(), func(c *slurm.JoinConfig) { c.MungeKeySecretARN = text })
		r := runJoin(t, "--config", cfg, "--no-start", "--munge-key", keyPath, "--munge-user", me, "--health-check-link", "")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		checkKey(t, keyPath)
		var st, ost syscall.Stat_t
		_ = syscall.Stat(keyPath, &st)
		_ = syscall.Fstat(int(old.Fd()), &ost)
		if st.Ino == ost.Ino {
			t.Error("the key file was rewritten in place, not replaced")
		}
	})

	t.Run("owned by munge", func(t *testing.T) {
		u, err := user.Lookup("munge")
		if err != nil || os.Geteuid() != 0 {
			t.Skip("needs root and a munge user")
		}
		startJoinIMDS(t, gpuNodeMetadata())
		dir := t.TempDir()
		keyPath := filepath.Join(dir, "munge.key")
		cfg := joinConfig(t, dir, func(c *slurm.JoinConfig) { c.MungeKeySecretARN = binary })
		if r := runJoin(t, "--config", cfg, "--no-start", "--munge-key", keyPath, "--health-check-link", ""); r.code != 0 || r.stderr != "" {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(keyPath, &st); err != nil || strconv.Itoa(int(st.Uid)) != u.Uid || strconv.Itoa(int(st.Gid)) != u.Gid || st.Mode&0o777 != 0o400 {
			t.Errorf("key owned by %d:%d mode %o, want %s:%s 400 (%v)", st.Uid, st.Gid, st.Mode&0o777, u.Uid, u.Gid, err)
		}
	})

	t.Run("no munge user", func(t *testing.T) {
		startJoinIMDS(t, gpuNodeMetadata())
		dir := t.TempDir()
		keyPath := filepath.Join(dir, "munge.key")
		cfg := joinConfig(t, dir, func(c *slurm.JoinConfig) { c.MungeKeySecretARN = binary })
		r := runJoin(t, "--config", cfg, "--no-start", "--munge-key", keyPath, "--munge-user", "no-such-user-mlp", "--health-check-link", "")
		if r.code != 0 || !strings.Contains(r.stderr, "hwprobe: slurm join: no no-such-user-mlp user") || !strings.Contains(r.stderr, "the munge key stays owned by") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if st, err := os.Stat(keyPath); err != nil || st.Mode().Perm() != 0o400 {
			t.Errorf("key %v %v", st, err)
		}
	})

	t.Run("refused secrets", func(t *testing.T) {
		for _, tt := range []struct{ name, arn, want string }{
			{"too short", short, "hwprobe: slurm join: munge key secret " + short + ": the key is 31 bytes; a munge key is 32 to 1024 bytes"},
			{"no such secret", missing, "hwprobe: slurm join: munge key secret " + missing + ": operation error Secrets Manager: GetSecretValue"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				startJoinIMDS(t, gpuNodeMetadata())
				dir := t.TempDir()
				keyPath := filepath.Join(dir, "munge", "munge.key")
				cfg := joinConfig(t, t.TempDir(), func(c *slurm.JoinConfig) { c.MungeKeySecretARN = tt.arn })
				r := runJoin(t, "--config", cfg, "--no-start", "--munge-key", keyPath, "--health-check-link", filepath.Join(dir, "link"))
				if r.code != exitCannotRun || !strings.HasPrefix(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
					t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, tt.want)
				}
				if strings.Contains(r.stderr, base64.StdEncoding.EncodeToString(key[:31])) {
					t.Error("the key was printed")
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Errorf("wrote %v", ents)
				}
			})
		}
	})

	t.Run("starts slurmd through systemd", func(t *testing.T) {
		startJoinIMDS(t, gpuNodeMetadata())
		dir := t.TempDir()
		// systemctl stand-in: records its arguments; fails when asked to.
		calls := filepath.Join(dir, "systemctl.log")
		systemctl := filepath.Join(dir, "systemctl")
		script := "#!/bin/sh\necho \"$*\" >> " + calls + "\nif [ -e " + filepath.Join(dir, "fail") + " ] && [ \"$2\" = munge ]; then echo 'Failed to restart munge.service: Unit munge.service not found.' >&2; exit 5; fi\n"
		if err := os.WriteFile(systemctl, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		slurmdBin := filepath.Join(dir, "slurmd")
		if err := os.WriteFile(slurmdBin, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		sysconfig := filepath.Join(dir, "etc", "sysconfig", "slurmd")
		debian := filepath.Join(dir, "etc", "default", "slurmd") // no /etc/default: not written
		unitDir := filepath.Join(dir, "etc", "systemd", "system")
		for _, d := range []string{filepath.Dir(sysconfig), unitDir} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(sysconfig, []byte("OTHER=1\nSLURMD_OPTIONS=\"-v\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		keyPath := filepath.Join(dir, "munge", "munge.key")
		link := filepath.Join(dir, "sbin", healthCheckName)
		cfg := joinConfig(t, t.TempDir(), func(c *slurm.JoinConfig) { c.MungeKeySecretARN = binary })
		args := []string{"--config", cfg, "--munge-key", keyPath, "--munge-user", me, "--health-check-link", link,
			"--slurmd", slurmdBin, "--systemctl", systemctl, "--slurmd-env", sysconfig + "," + debian, "--systemd-dir", unitDir}
		r := runJoin(t, args...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		quoted := "-Z --conf-server ctl-a,10.0.0.3:6817 -N train-9 --conf 'Gres=gpu:h100:8 Feature=p5.48xlarge,H100,efa RealMemory=2000000'"
		if want := "node train-9 (instance i-0abc) joins ctl-a,10.0.0.3:6817: slurmd " + quoted + "\n"; r.stdout != want {
			t.Errorf("stdout %q, want %q", r.stdout, want)
		}
		checkKey(t, keyPath)
		if b, _ := os.ReadFile(sysconfig); string(b) != "OTHER=1\n# Written by hwprobe slurm join\nSLURMD_OPTIONS=\""+quoted+"\"\n" {
			t.Errorf("%s:\n%s", sysconfig, b)
		}
		if _, err := os.Stat(debian); err == nil || !os.IsNotExist(err) {
			t.Errorf("%s written (%v)", debian, err)
		}
		if b, _ := os.ReadFile(filepath.Join(unitDir, slurm.SlurmdDropInName)); !strings.Contains(string(b), "[Unit]\nConditionPathExists=\n") {
			t.Errorf("drop-in:\n%s", b)
		}
		if target, _ := os.Readlink(link); target != executable(t) {
			t.Errorf("link to %q", target)
		}
		// The leave unit: hwprobe slurm leave at shutdown, with this
		// configuration; started after slurmd, so stopped before it.
		unit, err := os.ReadFile(filepath.Join(unitDir, slurm.LeaveUnitName))
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := slurm.LeaveUnit(executable(t), cfg); string(unit) != want || !strings.Contains(want, "ExecStop="+executable(t)+" slurm leave --config "+cfg+"\n") {
			t.Errorf("leave unit:\n%s\nwant\n%s", unit, want)
		}
		if st, err := os.Stat(filepath.Join(unitDir, slurm.LeaveUnitName)); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("leave unit mode %v, %v", st.Mode(), err)
		}
		if ents, _ := os.ReadDir(unitDir); len(ents) != 2 {
			t.Errorf("left in the unit directory: %v", ents)
		}
		log, _ := os.ReadFile(calls)
		if want := "daemon-reload\nrestart munge\nenable slurmd\nrestart slurmd\nenable --now mlplatform-slurm-leave.service\n"; string(log) != want {
			t.Errorf("systemctl calls:\n%s\nwant\n%s", log, want)
		}

		// A service that does not start: exit 2 with systemctl's reason.
		_ = os.Remove(calls)
		if err := os.WriteFile(filepath.Join(dir, "fail"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r = runJoin(t, args...)
		if want := "hwprobe: slurm join: systemctl restart munge: exit status 5: Failed to restart munge.service: Unit munge.service not found.\n"; r.code != exitCannotRun || r.stderr != want {
			t.Errorf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
		}
		if log, _ := os.ReadFile(calls); string(log) != "daemon-reload\nrestart munge\n" {
			t.Errorf("systemctl calls after the failure:\n%s", log)
		}
	})
}

func TestSlurmJoinHelp(t *testing.T) {
	r := runJoin(t, "--help")
	for _, want := range []string{"slurmd -Z", "--no-start", "--dry-run", "--munge-key", "--health-check-link", "SLURMD_OPTIONS", "Exit codes: 0 joined", "Example:\n  hwprobe slurm join --config /etc/mlplatform/slurm/join.json"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("slurm join --help: exit %d, lacks %q", r.code, want)
		}
	}
	var out, errb bytes.Buffer
	_ = run(context.Background(), []string{"help"}, newApp(&out, &errb, os.Getenv))
	if !strings.Contains(out.String(), "(slurm join)") {
		t.Errorf("help does not list slurm join:\n%s", out.String())
	}
	out.Reset()
	errb.Reset()
	_ = run(context.Background(), []string{"slurm", "--help"}, newApp(&out, &errb, os.Getenv))
	if !strings.Contains(out.String(), "  join ") {
		t.Errorf("slurm --help does not list join:\n%s", out.String())
	}
}
