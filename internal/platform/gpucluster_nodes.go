package platform

import (
	"slices"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// NodePlan is what it takes to turn the nodes that exist into the nodes
// declared. It is computed by PlanNodes, a pure function.
type NodePlan struct {
	// Keep are the nodes that stay as they are, by index.
	Keep []cloud.GPUNode
	// Remove are nodes to terminate: indices at or beyond node_count (scale
	// in, highest first), the losers of two nodes claiming one index, and
	// nodes whose index cannot be read.
	Remove []cloud.GPUNode
	// Launch are the indices below node_count that have no node (scale out,
	// or repair of a node lost outside Terraform).
	Launch []int
	// Roll are the stale nodes (launched from another node template, or
	// running another instance type), in batches of Rollout.BatchSize, by
	// index.
	Roll [][]cloud.GPUNode
}

// Converged reports whether nothing needs doing.
func (p NodePlan) Converged() bool {
	return len(p.Remove) == 0 && len(p.Launch) == 0 && len(p.Roll) == 0
}

// PlanNodes compares the live nodes with the declaration: count nodes with
// indices 0..count-1, each launched from the template whose NodeHash is
// specHash, of type instanceType.
func PlanNodes(nodes []cloud.GPUNode, count int, specHash, instanceType string, r Rollout) NodePlan {
	var p NodePlan
	stale := func(n cloud.GPUNode) bool {
		// A node stopped outside is replaced like a stale one.
		return n.SpecHash != specHash || (instanceType != "" && n.InstanceType != instanceType) || n.State == "stopped" || n.State == "stopping"
	}
	byIndex := map[int][]cloud.GPUNode{}
	for _, n := range nodes {
		if !n.Live() {
			continue
		}
		if n.Index < 0 || n.Index >= count {
			p.Remove = append(p.Remove, n)
			continue
		}
		byIndex[n.Index] = append(byIndex[n.Index], n)
	}
	// Scale in from the highest index down: ranks stay contiguous.
	slices.SortStableFunc(p.Remove, func(a, b cloud.GPUNode) int { return b.Index - a.Index })
	var staleNodes []cloud.GPUNode
	for i := range count {
		cands := byIndex[i]
		if len(cands) == 0 {
			p.Launch = append(p.Launch, i)
			continue
		}
		best := 0
		for j := 1; j < len(cands); j++ {
			if better(cands[j], cands[best], stale) {
				best = j
			}
		}
		for j, n := range cands {
			if j != best {
				p.Remove = append(p.Remove, n)
			}
		}
		if stale(cands[best]) {
			staleNodes = append(staleNodes, cands[best])
		} else {
			p.Keep = append(p.Keep, cands[best])
		}
	}
	size := max(r.BatchSize, 1)
	for b := range slices.Chunk(staleNodes, size) {
		p.Roll = append(p.Roll, b)
	}
	return p
}

// better says whether node a should hold an index rather than b: a fresh
// node beats a stale one, a running one a starting one, then the older one
// (the one already in use).
func better(a, b cloud.GPUNode, stale func(cloud.GPUNode) bool) bool {
	if sa, sb := stale(a), stale(b); sa != sb {
		return !sa
	}
	if ra, rb := a.State == "running", b.State == "running"; ra != rb {
		return ra
	}
	if !a.LaunchTime.Equal(b.LaunchTime) {
		return a.LaunchTime.Before(b.LaunchTime)
	}
	return a.InstanceID < b.InstanceID
}

// RollStep is one step of a rollout: terminate these nodes, launch these
// indices, in the order the strategy says.
type RollStep struct {
	LaunchFirst bool
	Terminate   []cloud.GPUNode
	Launch      []int
}

// RollSteps turns the stale batches of a plan into steps under the rollout
// strategy. A terminate-first step frees the capacity its replacements need;
// a launch-first step keeps the old nodes until the new ones run.
func RollSteps(p NodePlan, r Rollout) []RollStep {
	var out []RollStep
	for _, batch := range p.Roll {
		s := RollStep{LaunchFirst: r.Strategy == RolloutLaunchFirst, Terminate: batch}
		for _, n := range batch {
			s.Launch = append(s.Launch, n.Index)
		}
		out = append(out, s)
	}
	return out
}
