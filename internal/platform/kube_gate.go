package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// The gate's Kubernetes step (orchestrator.eks): at every look, the Nodes
// of instances whose evidence passed lose the startup taint and are
// labelled passed; those whose evidence failed keep it, are labelled
// failed and cordoned (a replacement then terminates them). Once the gate
// passed, it waits until every passed node is registered and untainted:
// an apply that succeeds leaves every node schedulable.

// kubeNodesAPI is what the step calls of the cluster's API.
type kubeNodesAPI interface {
	List(ctx context.Context, selector string) ([]cloud.KubeNode, error)
	RemoveTaint(ctx context.Context, n cloud.KubeNode, key string, labels map[string]string) error
	MarkFailed(ctx context.Context, n cloud.KubeNode, labels map[string]string) error
	Drain(ctx context.Context, name string) ([]string, error)
	DeleteNode(ctx context.Context, name string) error
}

// kubeGate is the step for one resource.
type kubeGate struct {
	resource string // "GPU cluster NAME", for messages
	selector string // the resource's Nodes
	progress func(format string, args ...any)
	// connect makes a client with a fresh token (tokens last 15 minutes;
	// a gate may run longer).
	connect func(ctx context.Context) (kubeNodesAPI, error)
	// passed are the instances whose evidence passed at the last look.
	passed []string
}

// newKubeGate reaches the cluster the plan read, with EKS tokens made from
// the provider's credentials.
func (e *Env) newKubeGate(resource, name string, ek *eksPlan, progress func(string, ...any)) (*kubeGate, error) {
	if ek == nil {
		return nil, errors.New("orchestrator.eks: the cluster was not read at plan")
	}
	ca, err := cloud.DecodeEKSCertificateAuthority(ek.Cluster.CertificateAuthority)
	if err != nil {
		return nil, fmt.Errorf("EKS cluster %s: %w", ek.Cluster.Name, err)
	}
	g := &kubeGate{resource: resource, selector: kube.LabelCluster + "=" + kube.LabelValue(name), progress: progress}
	g.connect = func(ctx context.Context) (kubeNodesAPI, error) {
		tok, err := cloud.EKSToken(ctx, e.Clients.STS, ek.Cluster.Name)
		if err != nil {
			return nil, err
		}
		return cloud.NewKubeNodes(cloud.KubeAccess{Endpoint: ek.Cluster.Endpoint, CAPEM: ca, Token: tok})
	}
	return g, nil
}

// list connects with a fresh token and lists the resource's Nodes.
func (g *kubeGate) list(ctx context.Context) (kubeNodesAPI, []cloud.KubeNode, error) {
	api, err := g.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	nodes, err := api.List(ctx, g.selector)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: Kubernetes: %w", g.resource, err)
	}
	return api, nodes, nil
}

// kubeConflictTries is how many times the gate reads a Node again and
// patches it anew when the Node changed between its read and the patch
// (ErrKubeConflict): its kubelet and hwprobe on the node patch it too.
const kubeConflictTries = 10

// judged acts on one look's verdicts: it lifts the taint of each passed
// node that registered, and marks each failed one. A node not registered
// yet is left for a later look. A Node that changed under the patch is
// read again and patched anew: the look that fails the gate is its last,
// and a failed node left unmarked then would stay uncordoned.
func (g *kubeGate) judged(ctx context.Context, res GateResult) error {
	for try := 1; ; try++ {
		conflict, err := g.judgeOnce(ctx, res)
		if err != nil || !conflict || try == kubeConflictTries {
			return err
		}
	}
}

// judgeOnce is one pass of judged over the Nodes as listed now; conflict
// says that a Node changed under one of its patches.
func (g *kubeGate) judgeOnce(ctx context.Context, res GateResult) (conflict bool, err error) {
	api, nodes, err := g.list(ctx)
	if err != nil {
		return false, err
	}
	byInstance := map[string]cloud.KubeNode{}
	for _, n := range nodes {
		if id := n.InstanceID(); id != "" {
			byInstance[id] = n
		}
	}
	g.passed = g.passed[:0]
	for _, v := range res.Nodes {
		n, ok := byInstance[v.InstanceID]
		switch v.Status {
		case NodePass:
			g.passed = append(g.passed, v.InstanceID)
			if !ok || !n.HasTaint(kube.TaintKey) && n.Labels[GateLabel] == GatePassed {
				continue
			}
			if n.HasTaint(kube.TaintKey) {
				g.progress("%s: Kubernetes: node %d (%s, Node %s) passed: lifting the taint %s", g.resource, v.Index, v.InstanceID, n.Name, kube.TaintKey)
			}
			if conflict, err = g.patched(conflict, api.RemoveTaint(ctx, n, kube.TaintKey, map[string]string{GateLabel: GatePassed})); err != nil {
				return false, err
			}
		case NodeFail, NodeRejected:
			if !ok || n.Unschedulable && n.Labels[GateLabel] == GateFailed {
				continue
			}
			g.progress("%s: Kubernetes: node %d (%s, Node %s) failed: cordoned, labelled %s=%s, its taint kept", g.resource, v.Index, v.InstanceID, n.Name, GateLabel, GateFailed)
			if conflict, err = g.patched(conflict, api.MarkFailed(ctx, n, map[string]string{GateLabel: GateFailed})); err != nil {
				return false, err
			}
		}
	}
	return conflict, nil
}

// patched folds a patch's outcome into judgeOnce's: a conflict is noted,
// any other error ends the pass.
func (g *kubeGate) patched(conflict bool, err error) (bool, error) {
	switch {
	case errors.Is(err, cloud.ErrKubeConflict):
		return true, nil
	case err != nil:
		return conflict, fmt.Errorf("%s: Kubernetes: %w", g.resource, err)
	}
	return conflict, nil
}

// drain cordons and drains the Nodes of instances about to be replaced
// (their evidence failed): their pods are evicted before their instances
// are terminated. A node not registered has nothing to drain.
func (g *kubeGate) drain(ctx context.Context, instances []string) error {
	// Cordoned first, read again while the Node changes under the patch
	// (its kubelet, hwprobe).
	var api kubeNodesAPI
	var nodes []cloud.KubeNode
	var err error
	for try := 0; ; try++ {
		if api, nodes, err = g.list(ctx); err != nil {
			return err
		}
		changed := false
		for _, n := range nodes {
			if !slices.Contains(instances, n.InstanceID()) || n.Unschedulable && n.Labels[GateLabel] == GateFailed {
				continue
			}
			err := api.MarkFailed(ctx, n, map[string]string{GateLabel: GateFailed})
			switch {
			case errors.Is(err, cloud.ErrKubeConflict) && try < kubeConflictTries:
				changed = true
			case err != nil:
				return fmt.Errorf("%s: Kubernetes: %w", g.resource, err)
			}
		}
		if !changed {
			break
		}
	}
	for _, n := range nodes {
		if !slices.Contains(instances, n.InstanceID()) {
			continue
		}
		evicted, err := api.Drain(ctx, n.Name)
		if err != nil {
			return fmt.Errorf("%s: Kubernetes: %w", g.resource, err)
		}
		g.progress("%s: Kubernetes: Node %s (%s) drained before its replacement: %d pod(s) evicted", g.resource, n.Name, n.InstanceID(), len(evicted))
	}
	return nil
}

// forget deletes the Nodes of instances that were replaced (terminated):
// a replacement may register under the same name (its private DNS name),
// before the cluster's node lifecycle controller removed the old one.
func (g *kubeGate) forget(ctx context.Context, instances []string) error {
	api, nodes, err := g.list(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if slices.Contains(instances, n.InstanceID()) {
			if err := api.DeleteNode(ctx, n.Name); err != nil {
				return fmt.Errorf("%s: Kubernetes: %w", g.resource, err)
			}
			g.progress("%s: Kubernetes: Node %s of replaced instance %s deleted", g.resource, n.Name, n.InstanceID())
		}
	}
	return nil
}

// KubeNodesTimeoutError: nodes whose evidence passed did not register
// with the cluster (or keep the taint) within the wait.
type KubeNodesTimeoutError struct {
	Resource  string
	Instances []string
	Waited    time.Duration
}

func (e *KubeNodesTimeoutError) Error() string {
	return fmt.Sprintf("%s: the evidence of %s passed, but after %s they are not registered with the Kubernetes cluster, or still carry the taint %s: check the kubelet on them (journalctl -u kubelet), the cluster's access entry for the nodes' role, and that the provider's identity may patch Nodes. Nothing was changed: apply again once they registered",
		e.Resource, strings.Join(e.Instances, ", "), e.Waited.Round(time.Second), kube.TaintKey)
}

// waitLifted looks until every instance that passed has a Node without the
// taint, within limit (and ctx), every poll.
func (g *kubeGate) waitLifted(ctx context.Context, res GateResult, limit, poll time.Duration) error {
	start := time.Now()
	for {
		if err := g.judged(ctx, res); err != nil {
			return err
		}
		_, nodes, err := g.list(ctx)
		if err != nil {
			return err
		}
		var waiting []string
		for _, id := range g.passed {
			i := slices.IndexFunc(nodes, func(n cloud.KubeNode) bool { return n.InstanceID() == id })
			if i < 0 || nodes[i].HasTaint(kube.TaintKey) {
				waiting = append(waiting, id)
			}
		}
		if len(waiting) == 0 {
			g.progress("%s: Kubernetes: every node that passed is schedulable (%d)", g.resource, len(g.passed))
			return nil
		}
		if time.Since(start) >= limit {
			return &KubeNodesTimeoutError{Resource: g.resource, Instances: waiting, Waited: time.Since(start)}
		}
		g.progress("%s: Kubernetes: waiting for %d node(s) to register: %s", g.resource, len(waiting), strings.Join(waiting, ", "))
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: waiting for Kubernetes nodes %s: %w", g.resource, strings.Join(waiting, ", "), ctx.Err())
		case <-t.C:
		}
	}
}
