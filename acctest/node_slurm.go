package acctest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/mlplatform/mlplatform/hwprobe/gpu/nvmlmock"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// SlurmJoiner starts a joining node's slurmd: a real one, against a real
// controller (slurmtest.Cluster). The node player gives it what the node's
// own `hwprobe slurm join` decided and wrote.
type SlurmJoiner interface {
	JoinNode(ctx context.Context, j SlurmJoin) error
	// LeaveNode shuts a joined node down as its instance's shutdown
	// does: the node's leave unit runs `hwprobe slurm leave`, then its
	// slurmd and munged stop.
	LeaveNode(ctx context.Context, l SlurmLeave) error
	// WatchNode takes one step of a leave the provider asked for, as
	// the node's watch unit does at each interval: `hwprobe slurm watch
	// --once`, with a stop command that stops the node's slurmd. done:
	// the node left and wrote its marker; false: jobs still run on it.
	WatchNode(ctx context.Context, w SlurmWatch) (done bool, err error)
}

// SlurmWatch is one joined node that the provider asked to leave Slurm:
// its instance tags (its metadata double) hold the request.
type SlurmWatch struct {
	SlurmLeave
	// Profile is the node's profile (the marker's destination).
	Profile string
}

// SlurmLeave is one joined node whose instance shuts down.
type SlurmLeave struct {
	InstanceID string
	NodeName   string
	// Hwprobe, Env and JoinConfig run the node's `hwprobe slurm leave`:
	// the node's environment (its metadata service) and its join
	// configuration.
	Hwprobe    string
	Env        []string
	JoinConfig string
}

// SlurmJoin is one node joining Slurm.
type SlurmJoin struct {
	InstanceID string
	// NodeName and SlurmdArgs are what `hwprobe slurm join --no-start`
	// printed: the node's Slurm name and slurmd's arguments.
	NodeName   string
	SlurmdArgs []string
	// MungeKeyFile is the munge key hwprobe fetched from Secrets Manager
	// and wrote (owned by the munge user, 0400).
	MungeKeyFile string
	// GPUs is how many GPUs the node plays (device files in its /dev).
	GPUs int
	// Hwprobe, Env, Profile and BootReport run the node's health check:
	// the binary, the node's environment (its machine description and
	// GPUs), its profile and its boot report.
	Hwprobe    string
	Env        []string
	Profile    string
	BootReport string
}

// joinSlurm does what the bootstrap's last step does on a node: `hwprobe
// slurm join`, with --no-start (the joiner starts slurmd in the node's own
// namespaces instead of systemd). The node's metadata service serves its
// launch index and instance tags, as EC2's does with metadata tags on.
func (p *NodePlayer) joinSlurm(ctx context.Context, clients *cloud.Clients, pn *playedNode, cfg *slurm.JoinConfig, dir string, env []string) error {
	out, err := clients.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{pn.n.InstanceID}})
	if err != nil || len(out.Reservations) == 0 || len(out.Reservations[0].Instances) == 0 {
		return fmt.Errorf("slurm join: describing the instance: %v", err)
	}
	inst := out.Reservations[0].Instances[0]
	pn.imds.SetPath("/latest/meta-data/ami-launch-index", strconv.Itoa(int(aws.ToInt32(inst.AmiLaunchIndex))))
	for _, t := range inst.Tags {
		pn.imds.SetTag(aws.ToString(t.Key), aws.ToString(t.Value))
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "slurm-join.json")
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		return err
	}
	// munged, as the munge user, reads the key: its folder must let it in.
	keyDir := filepath.Join(dir, "munge")
	if err := os.MkdirAll(keyDir, 0o711); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	keyFile := filepath.Join(keyDir, "munge.key")
	res, code, err := pn.run(ctx, "slurm", "join", "--config", cfgPath, "--no-start", "--munge-key", keyFile, "--health-check-link", "", "--profile", pn.profile)
	if err != nil || code != 0 {
		return fmt.Errorf("hwprobe slurm join exit %d: %v\n%s", code, err, res)
	}
	var printed struct {
		NodeName   string   `json:"node_name"`
		SlurmdArgs []string `json:"slurmd_args"`
	}
	line := res[strings.LastIndex(strings.TrimSpace(res), "\n")+1:]
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &printed); err != nil {
		return fmt.Errorf("hwprobe slurm join printed no JSON: %v\n%s", err, res)
	}
	p.Logf("node player: node %d (%s): joins Slurm as %s: slurmd %s", pn.n.Index, pn.n.InstanceID, printed.NodeName, strings.Join(printed.SlurmdArgs, " "))
	p.mu.Lock()
	if p.joined == nil {
		p.joined = map[string]SlurmLeave{}
	}
	p.joined[pn.n.InstanceID] = SlurmLeave{InstanceID: pn.n.InstanceID, NodeName: printed.NodeName, Hwprobe: p.Hwprobe, Env: env, JoinConfig: cfgPath}
	p.mu.Unlock()
	gpus, err := nvmlMockGPUs(pn.b.NVMLMock)
	if err != nil {
		return err
	}
	return p.Slurm.JoinNode(ctx, SlurmJoin{
		InstanceID: pn.n.InstanceID, NodeName: printed.NodeName, SlurmdArgs: printed.SlurmdArgs, MungeKeyFile: keyFile,
		GPUs: gpus, Hwprobe: p.Hwprobe, Env: env, Profile: pn.profile, BootReport: pn.report,
	})
}

// nvmlMockGPUs is how many GPUs an HWPROBE_NVML_MOCK spec plays: its
// gpus= setting, else every GPU of the mock machine; none without a spec.
func nvmlMockGPUs(spec string) (int, error) {
	if spec == "" {
		return 0, nil
	}
	s, err := nvmlmock.Parse(spec)
	if err != nil || s.GPUs > 0 {
		return s.GPUs, err
	}
	return nvmlmock.GPUCount, nil
}

// leaveSlurm shuts down, once, every joined node whose instance is no
// longer running (terminated by a scale-in, a replacement or a destroy).
func (p *NodePlayer) leaveSlurm(ctx context.Context, running map[string]bool) error {
	if p.Slurm == nil {
		return nil
	}
	p.mu.Lock()
	var gone []SlurmLeave
	for id, l := range p.joined {
		if !running[id] {
			gone = append(gone, l)
			delete(p.joined, id)
		}
	}
	p.mu.Unlock()
	for _, l := range gone {
		p.Logf("node player: %s (%s) shuts down: leaves Slurm", l.NodeName, l.InstanceID)
		if err := p.Slurm.LeaveNode(ctx, l); err != nil {
			return fmt.Errorf("node %s leaving Slurm: %w", l.NodeName, err)
		}
	}
	return nil
}

// watchSlurm takes a step of the leave the provider asked of node n (its
// SlurmLeaveTag), when n joined Slurm and has not left for that request:
// the node's watch unit, played.
func (p *NodePlayer) watchSlurm(ctx context.Context, n cloud.GPUNode) error {
	req := n.Tags[platform.SlurmLeaveTag]
	if p.Slurm == nil || req == "" {
		return nil
	}
	p.mu.Lock()
	pn := p.nodes[n.InstanceID]
	l, joined := p.joined[n.InstanceID]
	p.mu.Unlock()
	if pn == nil || !joined || pn.leftFor == req {
		return nil
	}
	pn.imds.SetTag(platform.SlurmLeaveTag, req)
	done, err := p.Slurm.WatchNode(ctx, SlurmWatch{SlurmLeave: l, Profile: pn.profile})
	if err != nil {
		return fmt.Errorf("node %s: hwprobe slurm watch: %w", l.NodeName, err)
	}
	if done {
		p.Logf("node player: %s (%s) left Slurm on request %s", l.NodeName, n.InstanceID, req)
		pn.leftFor = req
	}
	return nil
}

// watchSlurmLifecycle takes a step of the leave that Auto Scaling's
// terminate asks of instance id, held in Terminating:Wait by its group's
// terminate hook: its metadata's target lifecycle state says
// "Terminated", and the node's watch unit, played, drains it and leaves
// once its jobs end.
func (p *NodePlayer) watchSlurmLifecycle(ctx context.Context, id string) error {
	if p.Slurm == nil {
		return nil
	}
	p.mu.Lock()
	pn := p.nodes[id]
	l, joined := p.joined[id]
	p.mu.Unlock()
	if pn == nil || !joined || pn.leftFor == slurm.AutoScalingLeaveRequest {
		return nil
	}
	pn.imds.SetPath("/latest/meta-data/"+slurm.TargetLifecycleStatePath, "Terminated")
	done, err := p.Slurm.WatchNode(ctx, SlurmWatch{SlurmLeave: l, Profile: pn.profile})
	if err != nil {
		return fmt.Errorf("node %s: hwprobe slurm watch: %w", l.NodeName, err)
	}
	if done {
		p.Logf("node player: %s (%s) left Slurm as Auto Scaling terminates it", l.NodeName, id)
		pn.leftFor = slurm.AutoScalingLeaveRequest
	}
	return nil
}
