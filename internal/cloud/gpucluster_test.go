package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

func TestLaunchToken(t *testing.T) {
	base := LaunchToken("lt-1", 1, 0, []int{0, 1, 2, 3})
	if len(base) > 64 || !strings.HasPrefix(base, "mlp-") {
		t.Fatalf("token %q: want mlp- prefix and at most 64 characters", base)
	}
	same := LaunchToken("lt-1", 1, 0, []int{3, 2, 1, 0, 0})
	if same != base {
		t.Errorf("a retry of the same launch (indices reordered) must reuse the token: %s != %s", same, base)
	}
	for name, other := range map[string]string{
		"another template":  LaunchToken("lt-2", 1, 0, []int{0, 1, 2, 3}),
		"another version":   LaunchToken("lt-1", 2, 0, []int{0, 1, 2, 3}),
		"the next sequence": LaunchToken("lt-1", 1, 1, []int{0, 1, 2, 3}),
		"other indices":     LaunchToken("lt-1", 1, 0, []int{0, 1, 2}),
	} {
		if other == base {
			t.Errorf("%s must give a new token", name)
		}
	}
}

func TestFormatParseIndices(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""}, {[]int{0}, "0"}, {[]int{0, 1, 2, 3}, "0-3"}, {[]int{7, 0, 1, 9, 10, 3}, "0-1,3,7,9-10"},
	} {
		got := FormatIndices(tc.in)
		if got != tc.want {
			t.Errorf("FormatIndices(%v) = %q, want %q", tc.in, got, tc.want)
		}
		back, err := ParseIndices(got)
		if err != nil || FormatIndices(back) != got {
			t.Errorf("ParseIndices(%q) = %v, %v", got, back, err)
		}
	}
	for _, bad := range []string{"a", "3-1", "-1", "1-x"} {
		if _, err := ParseIndices(bad); err == nil {
			t.Errorf("ParseIndices(%q): want an error", bad)
		}
	}
	// Scattered indices split so every tag value fits 256 characters.
	var scattered []int
	for i := 0; i < 400; i += 2 {
		scattered = append(scattered, i)
	}
	n := 0
	for _, b := range splitIndexBatches(scattered) {
		if l := len(FormatIndices(b)); l > 256 {
			t.Errorf("batch tag of %d characters", l)
		}
		n += len(b)
	}
	if n != len(scattered) {
		t.Errorf("batches hold %d indices, want %d", n, len(scattered))
	}
}

func TestNetworkInterfaces(t *testing.T) {
	nis := NetworkInterfaces(16, "subnet-1", []string{"sg-1"})
	if len(nis) != 16 {
		t.Fatalf("want 16 interfaces, got %d", len(nis))
	}
	for i, ni := range nis {
		wantDev := int32(1)
		if i == 0 {
			wantDev = 0
		}
		if aws.ToInt32(ni.DeviceIndex) != wantDev || aws.ToInt32(ni.NetworkCardIndex) != int32(i) || aws.ToString(ni.InterfaceType) != "efa" || aws.ToString(ni.SubnetId) != "subnet-1" {
			t.Errorf("interface %d: device %d card %d type %s", i, aws.ToInt32(ni.DeviceIndex), aws.ToInt32(ni.NetworkCardIndex), aws.ToString(ni.InterfaceType))
		}
	}
	plain := NetworkInterfaces(0, "subnet-1", nil)
	if len(plain) != 1 || plain[0].InterfaceType != nil {
		t.Errorf("without EFA want one ordinary interface, got %+v", plain)
	}
}

// fakeGPUEC2 is an in-memory EC2 for the GPU cluster verbs: RunInstances is
// idempotent on the client token as EC2 is, and capacity errors can be
// queued.
type fakeGPUEC2 struct {
	GPUClusterAPI // unimplemented methods panic

	mu        sync.Mutex
	seq       int
	instances map[string]*types.Instance
	order     []string
	tokens    map[string][]string
	iceLeft   int // RunInstances capacity errors to return
	runCalls  int
	ltTags    map[string]string
	// states is what DescribeInstances reports for an instance, poll by
	// poll; the last one sticks.
	states map[string][]types.InstanceStateName
}

func newFakeGPUEC2() *fakeGPUEC2 {
	return &fakeGPUEC2{instances: map[string]*types.Instance{}, tokens: map[string][]string{}, ltTags: map[string]string{}, states: map[string][]types.InstanceStateName{}}
}

type gpuAPIErr struct{ code string }

func (e gpuAPIErr) Error() string                 { return e.code }
func (e gpuAPIErr) ErrorCode() string             { return e.code }
func (e gpuAPIErr) ErrorMessage() string          { return e.code }
func (e gpuAPIErr) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }

func (f *fakeGPUEC2) RunInstances(_ context.Context, in *ec2.RunInstancesInput, _ ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runCalls++
	if f.iceLeft > 0 {
		f.iceLeft--
		return nil, gpuAPIErr{"InsufficientInstanceCapacity"}
	}
	tok := aws.ToString(in.ClientToken)
	if ids, ok := f.tokens[tok]; ok {
		out := &ec2.RunInstancesOutput{}
		for _, id := range ids {
			out.Instances = append(out.Instances, *f.instances[id])
		}
		return out, nil
	}
	out := &ec2.RunInstancesOutput{}
	var tags []types.Tag
	for _, ts := range in.TagSpecifications {
		if ts.ResourceType == types.ResourceTypeInstance {
			tags = ts.Tags
		}
	}
	for i := range int(aws.ToInt32(in.MaxCount)) {
		f.seq++
		id := fmt.Sprintf("i-%04d", f.seq)
		inst := &types.Instance{
			InstanceId: aws.String(id), AmiLaunchIndex: aws.Int32(int32(i)), Tags: tags,
			State: &types.InstanceState{Name: types.InstanceStateNamePending}, LaunchTime: aws.Time(time.Unix(int64(f.seq), 0)),
		}
		f.instances[id] = inst
		f.order = append(f.order, id)
		f.tokens[tok] = append(f.tokens[tok], id)
		out.Instances = append(out.Instances, *inst)
	}
	return out, nil
}

func (f *fakeGPUEC2) CreateTags(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range in.Tags {
		f.ltTags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return &ec2.CreateTagsOutput{}, nil
}

func (f *fakeGPUEC2) TerminateInstances(_ context.Context, in *ec2.TerminateInstancesInput, _ ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range in.InstanceIds {
		if inst, ok := f.instances[id]; ok {
			inst.State = &types.InstanceState{Name: types.InstanceStateNameTerminated}
		}
	}
	return &ec2.TerminateInstancesOutput{}, nil
}

func (f *fakeGPUEC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var res types.Reservation
	ids := in.InstanceIds
	if len(ids) == 0 {
		ids = f.order
	}
	for _, id := range ids {
		inst, ok := f.instances[id]
		if !ok {
			return nil, gpuAPIErr{"InvalidInstanceID.NotFound"}
		}
		if s := f.states[id]; len(s) > 0 {
			inst.State = &types.InstanceState{Name: s[0]}
			if len(s) > 1 {
				f.states[id] = s[1:]
			}
		}
		res.Instances = append(res.Instances, *inst)
	}
	return &ec2.DescribeInstancesOutput{Reservations: []types.Reservation{res}}, nil
}

func gpuNoSleep(context.Context, time.Duration) error { return nil }

func TestLaunchGPUNodesIdempotent(t *testing.T) {
	f := newFakeGPUEC2()
	l := Launch{Cluster: "c", Template: LaunchTemplateRef{ID: "lt-1", Version: 1}, Indices: []int{0, 1, 2, 3}, SubnetID: "subnet-1", ZoneID: "mec1-az1", EFAInterfaces: 16, SpecHash: "h"}
	nodes, seq, err := LaunchGPUNodes(context.Background(), f, l, Backoff{Sleep: gpuNoSleep})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 || seq != 1 {
		t.Fatalf("want 4 nodes and sequence 1, got %d and %d", len(nodes), seq)
	}
	for i, n := range nodes {
		if n.Index != i {
			t.Errorf("node %s index %d, want %d", n.InstanceID, n.Index, i)
		}
	}
	// An interrupted apply retries with the state it saw before: same
	// sequence, same indices, same token: EC2 returns the same instances.
	again, _, err := LaunchGPUNodes(context.Background(), f, l, Backoff{Sleep: gpuNoSleep})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.instances) != 4 {
		t.Fatalf("a retried launch made %d instances, want 4", len(f.instances))
	}
	for i := range again {
		if again[i].InstanceID != nodes[i].InstanceID {
			t.Errorf("retry returned %s for index %d, want %s", again[i].InstanceID, i, nodes[i].InstanceID)
		}
	}
	if f.ltTags[TagLaunchSeq] != "1" {
		t.Errorf("launch sequence tag = %q, want 1", f.ltTags[TagLaunchSeq])
	}
}

func TestLaunchGPUNodesStaleToken(t *testing.T) {
	f := newFakeGPUEC2()
	l := Launch{Cluster: "c", Template: LaunchTemplateRef{ID: "lt-1", Version: 1}, Indices: []int{0}, SubnetID: "subnet-1", ZoneID: "mec1-az1"}
	first, _, err := LaunchGPUNodes(context.Background(), f, l, Backoff{Sleep: gpuNoSleep})
	if err != nil {
		t.Fatal(err)
	}
	// The node is terminated, its tag with the sequence was lost: the same
	// token would return the dead instance, so a fresh one is launched.
	f.instances[first[0].InstanceID].State = &types.InstanceState{Name: types.InstanceStateNameTerminated}
	again, seq, err := LaunchGPUNodes(context.Background(), f, l, Backoff{Sleep: gpuNoSleep})
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].InstanceID == first[0].InstanceID || !again[0].Live() {
		t.Fatalf("want a new live node, got %+v", again)
	}
	if seq != 2 {
		t.Errorf("sequence %d, want 2", seq)
	}
}

func TestLaunchGPUNodesCapacityBackoff(t *testing.T) {
	f := newFakeGPUEC2()
	f.iceLeft = 2
	var waits []time.Duration
	b := Backoff{Attempts: 4, Initial: time.Second, Max: 3 * time.Second, Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}
	l := Launch{Cluster: "c", Template: LaunchTemplateRef{ID: "lt-1", Version: 1}, Indices: []int{0, 1}, ZoneID: "mec1-az1"}
	nodes, _, err := LaunchGPUNodes(context.Background(), f, l, b)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("want 2 nodes after two capacity errors: %v %v", nodes, err)
	}
	if fmt.Sprint(waits) != "[1s 2s]" {
		t.Errorf("waits %v, want [1s 2s]", waits)
	}

	f = newFakeGPUEC2()
	f.iceLeft = 10
	waits = nil
	_, _, err = LaunchGPUNodes(context.Background(), f, l, b)
	var ce *CapacityError
	if !errors.As(err, &ce) || ce.Attempts != 4 || ce.ZoneID != "mec1-az1" {
		t.Fatalf("want a CapacityError after 4 attempts, got %v", err)
	}
	if fmt.Sprint(waits) != "[1s 2s 3s]" || f.runCalls != 4 {
		t.Errorf("waits %v (want [1s 2s 3s]), %d calls (want 4)", waits, f.runCalls)
	}
}

func TestWaitGPUNodesRunning(t *testing.T) {
	f := newFakeGPUEC2()
	l := Launch{Cluster: "c", Template: LaunchTemplateRef{ID: "lt-1", Version: 1}, Indices: []int{0, 1}}
	nodes, _, _ := LaunchGPUNodes(context.Background(), f, l, Backoff{Sleep: gpuNoSleep})
	a, b := nodes[0].InstanceID, nodes[1].InstanceID
	f.states[a] = []types.InstanceStateName{"pending", "running"}
	f.states[b] = []types.InstanceStateName{"pending", "pending", "running"}
	var polls []int
	sleeps := 0
	got, err := WaitGPUNodesRunning(context.Background(), f, []string{a, b}, NodeWaitOptions{
		Poll:     Poll{Sleep: func(context.Context, time.Duration) error { sleeps++; return nil }},
		Progress: func(ready, _ int, _ []string) { polls = append(polls, ready) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || fmt.Sprint(polls) != "[0 1 2]" || sleeps != 2 {
		t.Errorf("got %d nodes, progress %v (want [0 1 2]), %d sleeps (want 2)", len(got), polls, sleeps)
	}

	// A node that terminates while waited on fails the wait at once.
	f.states[a] = []types.InstanceStateName{"pending", "terminated"}
	_, err = WaitGPUNodesRunning(context.Background(), f, []string{a}, NodeWaitOptions{Poll: Poll{Sleep: gpuNoSleep}})
	var se *NodeStateError
	if !errors.As(err, &se) || se.State != "terminated" {
		t.Errorf("want a NodeStateError, got %v", err)
	}

	// The deadline is ctx's.
	f.states[b] = []types.InstanceStateName{"pending"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = WaitGPUNodesRunning(ctx, f, []string{b}, NodeWaitOptions{Poll: Poll{Interval: 10 * time.Millisecond}})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), b) {
		t.Errorf("want a deadline error naming %s, got %v", b, err)
	}
}

func TestWaitGPUNodesTerminated(t *testing.T) {
	f := newFakeGPUEC2()
	l := Launch{Cluster: "c", Template: LaunchTemplateRef{ID: "lt-1", Version: 1}, Indices: []int{0}}
	nodes, _, _ := LaunchGPUNodes(context.Background(), f, l, Backoff{Sleep: gpuNoSleep})
	id := nodes[0].InstanceID
	f.states[id] = []types.InstanceStateName{"shutting-down", "terminated"}
	if err := WaitGPUNodesTerminated(context.Background(), f, []string{id, "i-unknown"}, NodeWaitOptions{Poll: Poll{Sleep: gpuNoSleep}}); err != nil {
		t.Fatal(err)
	}
}
