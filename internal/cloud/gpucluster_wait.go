package cloud

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// WaitGPUNodesAPI is what the node waiters need.
type WaitGPUNodesAPI interface {
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}

// NodeWaitOptions tune a waiter. The deadline is ctx's (the front end's timeout).
type NodeWaitOptions struct {
	// Poll is how often the nodes are described; zero fields take
	// DefaultPolling().Nodes.
	Poll Poll
	// Progress, when set, hears how many nodes are ready after every poll.
	Progress func(ready, total int, pending []string)
}

// NodeStateError is a node that reached a state it cannot leave for the one
// waited on, e.g. terminated while waiting for running.
type NodeStateError struct {
	InstanceID string
	State      string
	Reason     string
}

func (e *NodeStateError) Error() string {
	s := fmt.Sprintf("node %s is %s", e.InstanceID, e.State)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// WaitGPUNodesRunning waits until every instance in ids is running. A node
// that shuts down or terminates meanwhile (spot interruption, the end of a
// capacity block, a failed launch) fails the wait with *NodeStateError.
// Instances not yet visible (EC2 is eventually consistent) count as pending.
func WaitGPUNodesRunning(ctx context.Context, api WaitGPUNodesAPI, ids []string, o NodeWaitOptions) ([]GPUNode, error) {
	return waitNodes(ctx, api, ids, o, "running", func(n GPUNode) (bool, error) {
		switch n.State {
		case "running":
			return true, nil
		case "pending", "":
			return false, nil
		default:
			return false, &NodeStateError{InstanceID: n.InstanceID, State: n.State, Reason: n.StateReason}
		}
	})
}

// WaitGPUNodesTerminated waits until every instance in ids is terminated or
// no longer listed.
func WaitGPUNodesTerminated(ctx context.Context, api WaitGPUNodesAPI, ids []string, o NodeWaitOptions) error {
	_, err := waitNodes(ctx, api, ids, o, "terminated", func(n GPUNode) (bool, error) {
		return n.State == "terminated" || n.State == "gone", nil
	})
	return err
}

func waitNodes(ctx context.Context, api WaitGPUNodesAPI, ids []string, o NodeWaitOptions, want string, done func(GPUNode) (bool, error)) ([]GPUNode, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	for w := o.Poll.Or(DefaultPolling().Nodes).Start(); ; {
		nodes, err := describeNodes(ctx, api, ids)
		if err != nil {
			return nil, err
		}
		var pending []string
		for _, id := range ids {
			n, ok := nodes[id]
			if !ok {
				n = GPUNode{InstanceID: id}
				if want == "terminated" {
					n.State = "gone"
				}
			}
			ok, err := done(n)
			if err != nil {
				return nil, fmt.Errorf("waiting for nodes to be %s: %w", want, err)
			}
			if !ok {
				pending = append(pending, id)
			}
		}
		if o.Progress != nil {
			o.Progress(len(ids)-len(pending), len(ids), pending)
		}
		if len(pending) == 0 {
			out := make([]GPUNode, 0, len(ids))
			for _, id := range ids {
				out = append(out, nodes[id])
			}
			return out, nil
		}
		if err := w.Next(ctx); err != nil {
			return nil, fmt.Errorf("waiting for nodes to be %s (still waiting on %s): %w", want, summarizeNodeIDs(pending), err)
		}
	}
}

// describeNodes describes instances by id, 1000 at a time. Ids EC2 does not
// know (yet, or any more) are left out of the result.
func describeNodes(ctx context.Context, api WaitGPUNodesAPI, ids []string) (map[string]GPUNode, error) {
	out := map[string]GPUNode{}
	for chunk := range slices.Chunk(ids, 1000) {
		remaining := slices.Clone(chunk)
		for len(remaining) > 0 {
			resp, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: remaining})
			if apiErrorCode(err) == "InvalidInstanceID.NotFound" {
				// Drop the unknown ids the message names, or ask one by one.
				keep := dropUnknownIDs(remaining, err.Error())
				if len(keep) == len(remaining) {
					if err := describeEach(ctx, api, remaining, out); err != nil {
						return nil, err
					}
					break
				}
				remaining = keep
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("describing nodes: %w", err)
			}
			for _, r := range resp.Reservations {
				for _, inst := range r.Instances {
					n := nodeFromInstance(inst)
					out[aws.ToString(inst.InstanceId)] = n
				}
			}
			break
		}
	}
	return out, nil
}

// dropUnknownIDs removes the ids an InvalidInstanceID.NotFound message names.
func dropUnknownIDs(ids []string, msg string) []string {
	var keep []string
	for _, id := range ids {
		if !strings.Contains(msg, id) {
			keep = append(keep, id)
		}
	}
	return keep
}

// describeEach describes instances one at a time, leaving out those EC2
// does not know.
func describeEach(ctx context.Context, api WaitGPUNodesAPI, ids []string, out map[string]GPUNode) error {
	for _, id := range ids {
		resp, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if apiErrorCode(err) == "InvalidInstanceID.NotFound" {
			continue
		}
		if err != nil {
			return fmt.Errorf("describing node %s: %w", id, err)
		}
		for _, r := range resp.Reservations {
			for _, inst := range r.Instances {
				out[aws.ToString(inst.InstanceId)] = nodeFromInstance(inst)
			}
		}
	}
	return nil
}

func summarizeNodeIDs(ids []string) string {
	if len(ids) <= 5 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:5], ", "), len(ids)-5)
}
