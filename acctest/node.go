package acctest

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
	"github.com/mlplatform/mlplatform/hwprobe/probe/machine"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The node player: acceptance tests of the validation gate play the nodes
// the emulator cannot run. For each node of a cluster it reads the profile
// from the launch template's user data (the bootstrap the provider
// rendered), runs the real hwprobe binary (its test build) against it,
// probing a fixed machine description of the node's CPU (Machine), and
// publishes the report to the emulator's S3 with
// hwprobe's own publish command. EC2's instance metadata service is
// played by a test double on loopback, serving the node's identity
// document signed with the test's NodeSigner; it is test code and says so.

// HostMachine, as a NodePlayer's Machine, has hwprobe probe this
// machine's own CPU.
const HostMachine = "host"

// The fixed machine descriptions a NodePlayer's nodes can be (front-end
// tests name them here: they may not import hwprobe's packages).
const (
	MachineZen5           = machine.Zen5           // 2-vCPU AMD EPYC Zen 5, no AMX
	MachineSapphireRapids = machine.SapphireRapids // 2-vCPU Intel Sapphire Rapids, AMX
)

// HwprobeEnv names an hwprobe test build (tags HwprobeTestTags) built
// already (make test builds it once for every test).
const HwprobeEnv = "ACCTEST_HWPROBE"

// BuildHwprobe returns the node player's hwprobe: $ACCTEST_HWPROBE when
// set, else it builds hwprobe from this module into dir.
func BuildHwprobe(ctx context.Context, dir string) (string, error) {
	if p := os.Getenv(HwprobeEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", HwprobeEnv, err)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "hwprobe")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", HwprobeTestTags, "-o", out, "./hwprobe/cmd/hwprobe")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building hwprobe: %w\n%s", err, b)
	}
	return out, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// NodeBehaviour is how a played node behaves.
type NodeBehaviour struct {
	// Silent nodes never report (a node whose bootstrap could not run).
	Silent bool
	// IdentityOf, when set, is the instance id the node's signed identity
	// document names instead of its own: a forged report, published under
	// the node's key.
	IdentityOf string
	// Report, when set, rewrites the report hwprobe wrote before it is
	// published: a node whose hardware fails a check this machine cannot
	// fail (a GPU's NVLink link down).
	Report func([]byte) ([]byte, error)
	// NVMLMock, when set, is the node's GPUs: an HWPROBE_NVML_MOCK spec
	// (see node_gpu.go).
	NVMLMock string
	// Machine, when set, is the node's CPU: a fixed machine description
	// (machine.Zen5, machine.SapphireRapids) in place of the player's.
	Machine string
	// Flood, when set, is how many objects the player writes beside the
	// node's report, under the node's own prefix, after it published: a
	// flood from anyone who may write there.
	Flood int
	// NoTPM: the node has no NitroTPM (its answers are not attested) even
	// when the player's nodes have one (NodePlayer.Nitro).
	NoTPM bool
	// Nitro, when set, is the node's NitroTPM in place of the player's:
	// another PKI's (a root the gate does not trust).
	Nitro *attesttest.Signer
	// NoAnswer: the node publishes its boot report but answers no
	// challenge (a node whose challenge service does not run).
	NoAnswer bool
	// Replay: the node answers its first challenge, and for every later
	// one the player stores that first answer (and its attestation) again,
	// under a key of the time of the new challenge, its generated_at
	// edited to match: a report of an earlier apply, replayed.
	Replay bool
	// ForgeAnswer, when set, rewrites each report the node writes (its
	// boot report and its answers) before anyone reads it, keeping the
	// node's attestation beside it: a writer of the reports prefix without
	// the node's hardware, who wins every race.
	ForgeAnswer func([]byte) ([]byte, error)
}

// NodePlayer plays the nodes of GPU clusters for one test.
type NodePlayer struct {
	H       *Harness
	Signer  *NodeSigner
	Hwprobe string // the hwprobe binary
	Dir     string // scratch directory
	// Machine is the fixed machine description hwprobe probes on every
	// node (HWPROBE_MACHINE), unless a node's behaviour names another:
	// the test decides what a node's CPU is, never the machine running
	// it. Default machine.SapphireRapids, the CPU of c7i and p5en.
	// HostMachine probes this machine's CPU (the emulator command's
	// choice for a person trying things by hand; no test's).
	Machine string
	// Behaviour says how the node at an index behaves, by its launch:
	// Behaviour(index, nth) where nth counts that index's instances (0 for
	// the first, 1 for its first replacement).
	Behaviour func(index, nth int) NodeBehaviour
	Logf      func(format string, args ...any)
	// Nitro, when set, is the nodes' NitroTPM: a test Nitro PKI whose
	// documents hwprobe's test build signs (HWPROBE_NITROTPM_TEST_SIGNER),
	// trusted by a configuration whose attestation_roots is NitroRootPEM.
	// nil: the nodes have no NitroTPM.
	Nitro *attesttest.Signer
	// Slurm, when set, starts the slurmd of every node whose bootstrap
	// joins Slurm (orchestrator.slurm), after the node ran `hwprobe slurm
	// join` as its bootstrap does.
	Slurm SlurmJoiner
	// Kube, when set, registers the Node of every node whose bootstrap
	// joins EKS (orchestrator.eks) with a real API server, after the node
	// published its report; hwprobe then publishes to it with the Node's
	// own credentials.
	Kube KubeJoiner

	joined map[string]SlurmLeave // by instance id: nodes that joined Slurm
	mu     sync.Mutex
	nodes  map[string]*playedNode // by instance id, for their challenges
	played map[string]bool
	nth    map[int]int
	errs   []error
}

// NewNodePlayer builds hwprobe and makes a signer. Its CertPEM is what the
// configuration must trust (trusted_certificates).
func NewNodePlayer(t *testing.T, h *Harness) *NodePlayer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := BuildHwprobe(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewNodeSigner()
	if err != nil {
		t.Fatal(err)
	}
	nitro, err := attesttest.New(attesttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := &NodePlayer{H: h, Signer: signer, Hwprobe: bin, Dir: dir, Machine: machine.SapphireRapids, Logf: t.Logf, Nitro: nitro, played: map[string]bool{}, nth: map[int]int{}}
	t.Cleanup(p.closeNodes)
	return p
}

// NitroRootPEM is the root of the nodes' NitroTPM (a test Nitro PKI), as
// a configuration's validation.attestation_roots.
func (p *NodePlayer) NitroRootPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Nitro.Root.Raw}))
}

// Watch plays every new running node of cluster until ctx ends.
func (p *NodePlayer) Watch(ctx context.Context, cluster string) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.PlayNew(ctx, cluster); err != nil && ctx.Err() == nil {
			p.mu.Lock()
			p.errs = append(p.errs, err)
			p.mu.Unlock()
			p.Logf("node player: %v", err)
		}
		select {
		case <-ctx.Done():
			p.closeNodes()
			return
		case <-tick.C:
		}
	}
}

// Errs are the errors the player met.
func (p *NodePlayer) Errs() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.errs...)
}

// Played lists the instance ids played so far.
func (p *NodePlayer) Played() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id := range p.played {
		out = append(out, id)
	}
	return out
}

// launchTagged reports whether n carries every tag its launch gives it.
func launchTagged(n cloud.GPUNode) bool {
	for _, k := range []string{cloud.TagNodeIndices, cloud.TagSpecHash, cloud.TagZoneID} {
		if _, ok := n.Tags[k]; !ok {
			return false
		}
	}
	return n.Index >= 0
}

// PlayNew plays the running nodes of cluster not played yet.
func (p *NodePlayer) PlayNew(ctx context.Context, cluster string) error {
	clients, err := p.H.Clients(ctx, Region)
	if err != nil {
		return err
	}
	c, err := cloud.FindGPUCluster(ctx, clients.EC2, cluster)
	if errors.Is(err, cloud.ErrNotFound) {
		return p.leaveSlurm(ctx, nil) // every node is gone
	}
	if err != nil {
		return err
	}
	running := map[string]bool{}
	for _, n := range c.Nodes {
		if n.State == "running" || n.State == "pending" {
			running[n.InstanceID] = true
		}
	}
	if err := p.leaveSlurm(ctx, running); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if n.State != "running" {
			continue
		}
		if !launchTagged(n) {
			// moto applies a launch's tags one at a time: a describe in
			// between sees the cluster's tag without the node's index or
			// zone. EC2 tags a launch at once; the next poll sees them.
			continue
		}
		p.mu.Lock()
		done := p.played[n.InstanceID]
		nth := p.nth[n.Index]
		if !done {
			p.played[n.InstanceID] = true
			p.nth[n.Index]++
		}
		p.mu.Unlock()
		if done {
			if err := p.answer(ctx, clients, n); err != nil {
				return fmt.Errorf("node %d (%s): %w", n.Index, n.InstanceID, err)
			}
			if err := p.watchSlurm(ctx, n); err != nil {
				return fmt.Errorf("node %d (%s): %w", n.Index, n.InstanceID, err)
			}
			continue
		}
		b := NodeBehaviour{}
		if p.Behaviour != nil {
			b = p.Behaviour(n.Index, nth)
		}
		if b.Silent {
			p.Logf("node player: node %d (%s) stays silent", n.Index, n.InstanceID)
			continue
		}
		if err := p.play(ctx, clients, c.LaunchTemplateID, n, b); err != nil {
			return fmt.Errorf("node %d (%s): %w", n.Index, n.InstanceID, err)
		}
	}
	return nil
}

// play runs hwprobe for one node and publishes its report.
func (p *NodePlayer) play(ctx context.Context, clients *cloud.Clients, ltID string, n cloud.GPUNode, b NodeBehaviour) error {
	lt, err := clients.EC2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(ltID), Versions: []string{"$Latest"}})
	if err != nil || len(lt.LaunchTemplateVersions) == 0 {
		return fmt.Errorf("reading the launch template: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(aws.ToString(lt.LaunchTemplateVersions[0].LaunchTemplateData.UserData))
	if err != nil {
		return fmt.Errorf("user data: %w", err)
	}
	parts, err := platform.ParseBootstrap(string(raw))
	if err != nil {
		return err
	}
	prof := parts.Profile
	acct, err := cloud.CallerAccount(ctx, clients.STS)
	if err != nil {
		return err
	}
	id := n.InstanceID
	if b.IdentityOf != "" {
		id = b.IdentityOf
	}
	doc := IdentityDocument{AccountID: acct, AvailabilityZone: n.Zone, ImageID: n.ImageID, InstanceID: id, InstanceType: n.InstanceType,
		PendingTime: n.LaunchTime.UTC().Format(time.RFC3339), PrivateIP: n.PrivateIP, Region: Region}.JSON()
	sig, err := p.Signer.Sign(doc)
	if err != nil {
		return err
	}
	// The metadata service names the node itself (so hwprobe publishes
	// under the node's key); the signed document names id.
	imds, err := startFakeIMDS(n.InstanceID, n.ZoneID, string(doc), sig)
	if err != nil {
		return err
	}
	kept := false
	defer func() {
		if !kept {
			imds.Close()
		}
	}()

	dir, err := os.MkdirTemp(p.Dir, n.InstanceID+"-")
	if err != nil {
		return err
	}
	profPath, repPath := filepath.Join(dir, "profile.hcl"), filepath.Join(dir, "report.json")
	if err := os.WriteFile(profPath, []byte(prof), 0o644); err != nil {
		return err
	}
	env := os.Environ()
	for k, v := range p.H.Env() {
		env = append(env, k+"="+v)
	}
	env = append(env, nvmlMockEnv(b.NVMLMock)...)
	mach := p.Machine
	if b.Machine != "" {
		mach = b.Machine
	}
	switch mach {
	case "":
		return errors.New("no machine description for the node: set NodePlayer.Machine")
	case HostMachine:
	default:
		env = append(env, machine.EnvVar+"="+mach)
	}
	env = append(env, "AWS_EC2_METADATA_DISABLED=false", "AWS_EC2_METADATA_SERVICE_ENDPOINT="+imds.URL, "AWS_ENDPOINT_URL_S3="+p.H.URL)
	nitro := p.Nitro
	if b.Nitro != nil {
		nitro = b.Nitro
	}
	if nitro != nil && !b.NoTPM {
		signerPath := filepath.Join(dir, "nitrotpm-signer.pem")
		raw, err := nitro.MarshalPEM()
		if err != nil {
			return err
		}
		if err := os.WriteFile(signerPath, raw, 0o600); err != nil {
			return err
		}
		env = append(env, attesttest.SignerEnvVar+"="+signerPath)
	}
	runIn := func(ctx context.Context, args ...string) (string, int, error) {
		cmd := exec.CommandContext(ctx, p.Hwprobe, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode(), nil
		}
		return string(out), 0, err
	}
	run := func(args ...string) (string, int, error) { return runIn(ctx, args...) }
	// The bootstrap's own command lines (validate, then publish).
	out, code, err := run("validate", "--profile", profPath, "--format", "table", "--report", repPath)
	if err != nil {
		return fmt.Errorf("hwprobe validate: %w", err)
	}
	p.Logf("node player: node %d (%s): hwprobe validate exit %d\n%s", n.Index, n.InstanceID, code, out)
	if mach != HostMachine && !strings.Contains(out, "fixed machine description "+mach) {
		return fmt.Errorf("hwprobe %s probed this machine's CPU, not the machine description %s: it is not a test build (tags %s)", p.Hwprobe, mach, HwprobeTestTags)
	}
	if _, err := os.Stat(repPath); err != nil {
		return fmt.Errorf("hwprobe validate wrote no report (exit %d): %s", code, out)
	}
	if b.Report != nil {
		raw, err := os.ReadFile(repPath)
		if err != nil {
			return err
		}
		if raw, err = b.Report(raw); err != nil {
			return err
		}
		if err := os.WriteFile(repPath, raw, 0o644); err != nil {
			return err
		}
	}
	pn := &playedNode{n: n, b: b, imds: imds, run: runIn, profile: profPath, report: repPath}
	pr, diags := profile.Load("profile.hcl", []byte(prof))
	if !diags.HasErrors() && pr.Report != nil {
		pn.bucket, pn.prefix, _ = strings.Cut(strings.TrimPrefix(pr.Report.S3URI, "s3://"), "/")
		pn.prefix = strings.TrimSuffix(pn.prefix, "/") + "/"
	}
	if b.Flood > 0 {
		// Before the report, so that no look of the gate finds the
		// report alone.
		if pn.bucket == "" {
			return fmt.Errorf("flood: the node's profile names no report target: %v", diags)
		}
		if err := p.flood(ctx, clients, "s3://"+pn.bucket+"/"+pn.prefix+n.InstanceID+"/", b.Flood); err != nil {
			return err
		}
	}
	// A node that joins EKS registers while hwprobe validates it: before
	// its report exists.
	kubeconfig := ""
	if parts.EKSNodeConfig != "" && p.Kube != nil {
		if kubeconfig, err = p.registerKube(ctx, pn, parts.EKSNodeConfig, dir); err != nil {
			return err
		}
	}
	if parts.KubeadmJoinConfig != "" && p.Kube != nil {
		if kubeconfig, err = p.registerKubeadm(ctx, clients, pn, parts, dir); err != nil {
			return err
		}
	}
	publish := []string{"report", "publish", "--profile", profPath, "--report", repPath}
	if b.ForgeAnswer != nil {
		publish = append(publish, "--to", "s3://"+pn.bucket+"/"+forgerStaging)
	}
	out, code, err = run(publish...)
	if err != nil || code != 0 {
		return fmt.Errorf("hwprobe report publish exit %d: %v\n%s", code, err, out)
	}
	p.Logf("node player: node %d (%s): published %s", n.Index, n.InstanceID, strings.TrimSpace(out))
	if b.ForgeAnswer != nil {
		// A boot report the forger failed to rewrite stays where the gate
		// does not look; the answers are what it judges.
		if err := p.forge(ctx, clients, pn, lastS3URI(out)); err != nil {
			p.Logf("node player: node %d (%s): forging the boot report: %v", n.Index, n.InstanceID, err)
		}
	}
	if parts.Slurm != nil && p.Slurm != nil {
		if err := p.joinSlurm(ctx, clients, pn, parts.Slurm, dir, env); err != nil {
			return err
		}
	}
	if kubeconfig != "" {
		if err := p.publishKube(ctx, pn, kubeconfig, dir); err != nil {
			return err
		}
	}
	if err := p.completeLifecycle(n, parts.Script); err != nil {
		return err
	}
	// The node answers the gate's challenges from now on, as the
	// bootstrap's challenge service does.
	kept = true
	p.mu.Lock()
	if p.nodes == nil {
		p.nodes = map[string]*playedNode{}
	}
	p.nodes[n.InstanceID] = pn
	p.mu.Unlock()
	return p.answer(ctx, clients, n)
}

// flood writes n small .json objects under dir (s3://BUCKET/PREFIX/), eight
// at a time.
func (p *NodePlayer) flood(ctx context.Context, clients *cloud.Clients, dirURI string, n int) error {
	bucket, dir, _ := strings.Cut(strings.TrimPrefix(dirURI, "s3://"), "/")
	work := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if _, err := clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("%sflood-%05d.json", dir, j)), Body: strings.NewReader("{}")}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for j := range n {
		select {
		case work <- j:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	if err != nil {
		return fmt.Errorf("flood: %w", err)
	}
	p.Logf("node player: wrote %d objects under s3://%s/%s", n, bucket, dir)
	return nil
}

// fakeIMDS is a test double of EC2's instance metadata service (IMDSv2)
// for one node, on loopback.
type fakeIMDS struct {
	URL string
	srv *http.Server

	mu    sync.Mutex
	tags  map[string]string // instance tags in metadata
	paths map[string]string
}

func (f *fakeIMDS) Close() { _ = f.srv.Close() }

// SetPath makes the metadata path read v.
func (f *fakeIMDS) SetPath(path, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths[path] = v
}

// SetTag makes the instance tag k read v (tags/instance/k).
func (f *fakeIMDS) SetTag(k, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tags[k] = v
}

func startFakeIMDS(instanceID, zoneID, doc, sig string) (*fakeIMDS, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	paths := map[string]string{
		"/latest/meta-data/instance-id":                    instanceID,
		"/latest/meta-data/placement/availability-zone-id": zoneID,
		"/latest/dynamic/instance-identity/document":       doc,
		"/latest/dynamic/instance-identity/rsa2048":        sig,
	}
	f := &fakeIMDS{tags: map[string]string{}, paths: paths}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = w.Write([]byte("test-token"))
			return
		}
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") != "test-token" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		f.mu.Lock()
		v, ok := f.paths[r.URL.Path]
		f.mu.Unlock()
		if tag, isTag := strings.CutPrefix(r.URL.Path, "/latest/meta-data/tags/instance/"); isTag {
			f.mu.Lock()
			v, ok = f.tags[tag]
			f.mu.Unlock()
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(v))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	f.URL, f.srv = "http://"+ln.Addr().String(), srv
	return f, nil
}

// BuildCLI returns the mlplatform command line for a test to run:
// $MLPLATFORM_BIN/mlplatform when make test built it, else built from
// this module into the test's temporary directory.
func BuildCLI(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("MLPLATFORM_BIN"); d != "" {
		if p := filepath.Join(d, "mlplatform"); fileExists(p) {
			return p
		}
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "mlplatform")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/mlplatform")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building mlplatform: %v\n%s", err, b)
	}
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
