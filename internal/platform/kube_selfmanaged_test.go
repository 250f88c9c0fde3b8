package platform

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

func TestClassifyKubeServer(t *testing.T) {
	for _, tc := range []struct {
		server, endpoint, addr, region string
		bad                            bool
	}{
		{server: "https://10.0.1.23:6443", endpoint: "10.0.1.23:6443", addr: "10.0.1.23"},
		{server: "https://[fd00::1]:6443", endpoint: "[fd00::1]:6443", addr: "fd00::1"},
		{server: "https://10.0.1.23", endpoint: "10.0.1.23:443", addr: "10.0.1.23"},
		{server: "https://ABCDEF0123.gr7.me-central-1.eks.amazonaws.com", endpoint: "abcdef0123.gr7.me-central-1.eks.amazonaws.com:443", region: "me-central-1"},
		{server: "https://k8s-api-0123abcd.elb.me-central-1.amazonaws.com:6443", endpoint: "k8s-api-0123abcd.elb.me-central-1.amazonaws.com:6443", region: "me-central-1"},
		{server: "https://k8s-api-123.eu-west-1.elb.amazonaws.com:6443", endpoint: "k8s-api-123.eu-west-1.elb.amazonaws.com:6443", region: "eu-west-1"},
		{server: "https://ip-10-0-1-23.me-central-1.compute.internal:6443", endpoint: "ip-10-0-1-23.me-central-1.compute.internal:6443", region: "me-central-1"},
		{server: "https://ip-10-0-1-23.ec2.internal:6443", endpoint: "ip-10-0-1-23.ec2.internal:6443", region: "us-east-1"},
		{server: "https://ec2-3-28-0-1.me-central-1.compute.amazonaws.com:6443", endpoint: "ec2-3-28-0-1.me-central-1.compute.amazonaws.com:6443", region: "me-central-1"},
		// Names that prove nothing.
		{server: "https://k8s.example.com:6443", endpoint: "k8s.example.com:6443"},
		{server: "https://me-central-1.compute.internal.example.com", endpoint: "me-central-1.compute.internal.example.com:443"},
		{server: "https://compute.internal", endpoint: "compute.internal:443"},
		{server: "https://eks.amazonaws.com", endpoint: "eks.amazonaws.com:443"},
		{server: "https://x.not-a-region.eks.amazonaws.com", endpoint: "x.not-a-region.eks.amazonaws.com:443"},
		{server: "https://foo.me-central-1.compute.amazonaws.com", endpoint: "foo.me-central-1.compute.amazonaws.com:443"},
		{server: "http://10.0.0.1", bad: true},
		{server: "https://", bad: true},
		{server: "10.0.0.1:6443", bad: true},
		{server: "https://[fe80::1%25eth0]:6443", bad: true},
	} {
		loc, err := ClassifyKubeServer(tc.server)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: accepted: %+v", tc.server, loc)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.server, err)
			continue
		}
		addr := ""
		if loc.Addr.IsValid() {
			addr = loc.Addr.String()
		}
		if loc.Endpoint() != tc.endpoint || addr != tc.addr || loc.Region != tc.region {
			t.Errorf("%s: endpoint %s, addr %q, region %q; want %s, %q, %q", tc.server, loc.Endpoint(), addr, loc.Region, tc.endpoint, tc.addr, tc.region)
		}
	}
}

func FuzzClassifyKubeServer(f *testing.F) {
	for _, s := range []string{"https://10.0.1.23:6443", "https://[fd00::1]:6443", "https://x.gr7.me-central-1.eks.amazonaws.com", "https://a.elb.me-central-1.amazonaws.com",
		"https://ip-1.me-central-1.compute.internal", "https://ec2-1.me-central-1.compute.amazonaws.com", "https://k8s.example.com", "http://x", "https://[::ffff:10.0.0.1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, server string) {
		loc, err := ClassifyKubeServer(server)
		if err != nil {
			return
		}
		if loc.Addr.IsValid() && loc.Region != "" {
			t.Fatalf("%q: both an address and a region: %+v", server, loc)
		}
		if loc.Region != "" && !residency.ValidRegion(loc.Region) {
			t.Fatalf("%q: region %q", server, loc.Region)
		}
		if loc.Region != "" && !strings.HasSuffix(loc.Host, ".amazonaws.com") && !strings.HasSuffix(loc.Host, ".internal") {
			t.Fatalf("%q: region %q from a name outside AWS's", server, loc.Region)
		}
		if _, _, err := net.SplitHostPort(loc.Endpoint()); err != nil {
			t.Fatalf("%q: endpoint %q: %v", server, loc.Endpoint(), err)
		}
	})
}

// testCA makes a self-signed CA certificate (PEM).
func testCA(t testing.TB) ([]byte, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), c
}

func TestKubeCACertHashes(t *testing.T) {
	caPEM, c := testCA(t)
	// kubeadm's pin: SHA-256 of the DER SubjectPublicKeyInfo.
	spki, err := x509.MarshalPKIXPublicKey(c.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	want := "sha256:" + hex.EncodeToString(sum[:])
	got, err := KubeCACertHashes(caPEM)
	if err != nil || !slices.Equal(got, []string{want}) {
		t.Fatalf("hashes %v, %v; want %s", got, err, want)
	}
	other, _ := testCA(t)
	if got, err := KubeCACertHashes(append(append([]byte{}, caPEM...), other...)); err != nil || len(got) != 2 || got[0] != want {
		t.Errorf("bundle: %v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, []byte("not pem"), []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")} {
		if _, err := KubeCACertHashes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestKubeadmJoinConfigRoundTrip(t *testing.T) {
	kp := &kubePlan{Endpoint: "10.0.0.10:6443", CAHashes: []string{"sha256:" + strings.Repeat("ab", 32)}}
	labels := KubeNodeLabels(&KubeSpec{Labels: map[string]string{"team.example.com/owner": "vision"}}, "gpu-cluster", "train", "p5en.48xlarge", "mlplatform-train", "version = 1\n")
	text := KubeadmJoinConfig(kp, labels)
	got, err := ParseKubeadmJoinConfig(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	want := KubeadmJoinParts{APIServerEndpoint: kp.Endpoint, CACertHashes: kp.CAHashes, Labels: labels, ProviderID: KubeadmProviderID,
		Taints: []cloud.KubeTaint{{Key: EKSTaintKey, Value: "pending", Effect: "NoSchedule"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v\n%s", got, want, text)
	}
	if labels["team.example.com/owner"] != "vision" || labels[EKSLabelCluster] != "train" || labels[EKSLabelPlacement] != "mlplatform-train" {
		t.Errorf("labels %v", labels)
	}
	if strings.Contains(text, "token") {
		t.Errorf("the rendered configuration names a token:\n%s", text)
	}
	for _, bad := range []string{
		strings.Replace(text, "v1beta4", "v1beta3", 1),
		strings.Replace(text, `"10.0.0.10:6443"`, `"10.0.0.10"`, 1),
		strings.Replace(text, "    caCertHashes:\n      - \"sha256:"+strings.Repeat("ab", 32)+"\"\n", "", 1),
		strings.Replace(text, "  bootstrapToken:\n", "  bootstrapToken:\n    token: \"not-a-token\"\n", 1),
		strings.Replace(text, "mlplatform.io/resource=gpu-cluster", "mlplatform.io/resource", 1),
		"{",
	} {
		if _, err := ParseKubeadmJoinConfig(bad); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

func FuzzParseKubeadmJoinConfig(f *testing.F) {
	kp := &kubePlan{Endpoint: "10.0.0.10:6443", CAHashes: []string{"sha256:00"}}
	f.Add(KubeadmJoinConfig(kp, map[string]string{"a": "b"}))
	f.Add("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  tlsBootstrapToken: abcdef.0123456789abcdef\n  bootstrapToken:\n    token: abcdef.0123456789abcdef\n    apiServerEndpoint: h:1\n    caCertHashes: [x]\n")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseKubeadmJoinConfig(text)
		if err != nil {
			return
		}
		if _, _, err := net.SplitHostPort(p.APIServerEndpoint); err != nil || len(p.CACertHashes) == 0 {
			t.Fatalf("accepted endpoint %q, hashes %v", p.APIServerEndpoint, p.CACertHashes)
		}
		if p.Token != "" && ValidBootstrapToken(p.Token) != nil {
			t.Fatalf("accepted token of the wrong form")
		}
	})
}

func TestKubeSpecValidate(t *testing.T) {
	const sec = "arn:aws:secretsmanager:me-central-1:123456789012:secret:kube-AbCdEf"
	all := func(string) bool { return true }
	good := KubeSpec{KubeconfigSecretARN: sec, JoinTokenSecretARN: sec, Labels: map[string]string{"team.example.com/owner": "vision"}}
	if ps := good.validate(all, true, false); len(ps) != 0 {
		t.Errorf("good: %+v", ps)
	}
	paths := func(ps []Problem) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Path)
		}
		return out
	}
	bad := KubeSpec{KubeconfigSecretARN: "kubeconfig", JoinTokenSecretARN: "arn:aws:s3:::bucket", Labels: map[string]string{"kubernetes.io/role": "x"}}
	want := []string{KubePath, "orchestrator", KubePath + ".kubeconfig_secret_arn", KubePath + ".join_token_secret_arn", KubePath + `.labels["kubernetes.io/role"]`}
	if got := paths(bad.validate(all, false, true)); !slices.Equal(got, want) {
		t.Errorf("bad: %v, want %v", got, want)
	}
	// Unknown values are checked at apply.
	if ps := bad.validate(func(p string) bool { return p != KubePath }, true, false); len(ps) != 0 {
		t.Errorf("unknown block: %+v", ps)
	}
	if refs := good.residencyRefs(all); len(refs) != 2 || refs[0].Kind != residency.KindSecret || !refs[1].Required {
		t.Errorf("refs %+v", refs)
	}
	if refs := good.residencyRefs(func(p string) bool { return p != KubePath+".join_token_secret_arn" }); len(refs) != 1 || refs[0].Path != KubePath+".kubeconfig_secret_arn" {
		t.Errorf("unknown token secret: refs %+v", refs)
	}
}

// The bootstrap's kubeadm join, run with stand-ins for aws, curl and
// kubeadm: the token read from the secret reaches kubeadm's copy of the
// configuration (discovery and TLS bootstrap), the provider ID is the
// instance's, and the copy is removed after the join.
func TestBootstrapKubeadmJoin(t *testing.T) {
	const sec = "arn:aws:secretsmanager:me-central-1:123456789012:secret:join-AbCdEf"
	const token = "abcdef.0123456789abcdef"
	kp := &kubePlan{Endpoint: "10.0.0.10:6443", CAHashes: []string{"sha256:" + strings.Repeat("cd", 32)}}
	join := KubeadmJoinConfig(kp, map[string]string{"a": "b"})
	ud, err := Bootstrap(BootstrapInput{Profile: "version = 1\n", Region: "me-central-1", Kubeadm: &KubeadmBootstrap{JoinConfig: join, TokenSecretARN: sec}})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ParseBootstrap(ud)
	if err != nil || parts.KubeadmJoinConfig != join || parts.KubeadmTokenSecretARN != sec {
		t.Fatalf("parts %+v, %v", parts, err)
	}
	if strings.Contains(ud, token) || !strings.Contains(parts.Script, "--kubeconfig "+KubeadmKubeletKubeconfig) {
		t.Errorf("script:\n%s", parts.Script)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(bin, 0o755))
	must(os.WriteFile(filepath.Join(dir, "join.yaml"), []byte(join), 0o644))
	must(os.WriteFile(filepath.Join(dir, "secret"), []byte(sec+"\n"), 0o644))
	stub := func(name, body string) {
		must(os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755))
	}
	stub("aws", `[ "$*" = "secretsmanager get-secret-value --region me-central-1 --secret-id `+sec+` --query SecretString --output text" ] || { echo "aws $*" >&2; exit 1; }; echo `+token+"\n")
	stub("curl", `case "$*" in *api/token) echo imds-token;; *placement/availability-zone) echo me-central-1a;; *instance-id) echo i-0123456789abcdef0;; *) exit 1;; esac`+"\n")
	stub("kubeadm", `[ "$1 $2" = "join --config" ] && ls -l "$3" | grep -q '^-rw-------' && cp "$3" "`+dir+`/joined.yaml"`+"\n")
	script := parts.Script
	script = strings.ReplaceAll(script, KubeadmJoinConfigPath, filepath.Join(dir, "join.yaml"))
	script = strings.ReplaceAll(script, KubeadmTokenSecretPath, filepath.Join(dir, "secret"))
	script = strings.ReplaceAll(script, "/run/mlplatform-kubeadm-join", filepath.Join(dir, "run-join"))
	script = strings.ReplaceAll(script, "tee /dev/console", "cat")
	// The header (log, the region) and the join: hwprobe is not on this
	// machine.
	start := strings.Index(script, "if ! command -v kubeadm")
	end := strings.Index(script, "joined Kubernetes (kubeadm)")
	if start < 0 || end < start {
		t.Fatalf("no kubeadm join in the script:\n%s", script)
	}
	end += strings.Index(script[end:], "\n") + 1
	head := script[:strings.Index(script, "profile=")]
	script = head + script[start:end]
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "joined.yaml"))
	if err != nil {
		t.Fatalf("kubeadm did not join: %v\n%s", err, out)
	}
	got, err := ParseKubeadmJoinConfig(string(raw))
	if err != nil || got.Token != token || got.ProviderID != "aws:///me-central-1a/i-0123456789abcdef0" || got.APIServerEndpoint != kp.Endpoint {
		t.Fatalf("kubeadm's configuration: %+v, %v\n%s", got, err, raw)
	}
	if !strings.Contains(string(raw), "tlsBootstrapToken: \""+token+"\"") {
		t.Errorf("no TLS bootstrap token:\n%s", raw)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "run-join*")); len(left) != 0 {
		t.Errorf("the copy with the token is left: %v", left)
	}
	if strings.Contains(string(out), token) {
		t.Errorf("the token is in the log:\n%s", out)
	}

	// A secret holding more than a token (a second line) is refused
	// before kubeadm runs.
	must(os.Remove(filepath.Join(dir, "joined.yaml")))
	stub("aws", "printf '%s\\n%s\\n' "+token+" 'x: y'\n")
	cmd = exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "holds no kubeadm bootstrap token") {
		t.Errorf("a two-line secret: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "joined.yaml")); err == nil {
		t.Errorf("kubeadm ran with a two-line secret")
	}
}
