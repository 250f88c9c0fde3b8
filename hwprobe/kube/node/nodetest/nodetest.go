// Package nodetest is a test double: a stand-in for the API server's Node API, for the
// tests of hwprobe/kube/node and of the hwprobe command: it applies
// patches as the API server does (strategic-merge patches on the Node's
// JSON, conditions merged on their type), a status patch changing only
// the status and any other only the rest, and refuses, as the Node
// authorizer and NodeRestriction do, to read or change another Node than
// the caller's own (Self) when Self is set. The real API server is in
// acctest's TestKubeHwprobe*.
package nodetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Patch is one patch a caller sent.
type Patch struct {
	Node, Subresource, FieldManager string
	Type                            types.PatchType
	Data                            string
}

// Nodes holds Nodes by name.
type Nodes struct {
	// Self, when set, is the caller's own Node: reading or patching any
	// other is forbidden.
	Self string
	// Err, when set, is returned by every call.
	Err error

	mu      sync.Mutex
	nodes   map[string]*corev1.Node
	patches []Patch
}

// New holds nodes.
func New(nodes ...*corev1.Node) *Nodes {
	f := &Nodes{nodes: map[string]*corev1.Node{}}
	for _, n := range nodes {
		f.nodes[n.Name] = n.DeepCopy()
	}
	return f
}

var nodesResource = schema.GroupResource{Resource: "nodes"}

// Get returns a copy of the Node name.
func (f *Nodes) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Self != "" && name != f.Self {
		return nil, apierrors.NewForbidden(nodesResource, name, fmt.Errorf("node %q cannot read %q, only its own Node object", f.Self, name))
	}
	n, ok := f.nodes[name]
	if !ok {
		return nil, apierrors.NewNotFound(nodesResource, name)
	}
	return n.DeepCopy(), nil
}

// Patch applies a strategic-merge or merge patch to the Node name (for
// labels and conditions the two agree on everything hwprobe sends but
// the merging of lists, which only the strategic patch does).
func (f *Nodes) Patch(_ context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return nil, f.Err
	}
	p := Patch{Node: name, Subresource: strings.Join(sub, "/"), FieldManager: opts.FieldManager, Type: pt, Data: string(data)}
	f.patches = append(f.patches, p)
	if f.Self != "" && name != f.Self {
		return nil, apierrors.NewForbidden(nodesResource, name, fmt.Errorf("node %q is not allowed to modify node %q", f.Self, name))
	}
	old, ok := f.nodes[name]
	if !ok {
		return nil, apierrors.NewNotFound(nodesResource, name)
	}
	orig, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	var b []byte
	switch pt {
	case types.StrategicMergePatchType:
		b, err = strategicpatch.StrategicMergePatch(orig, data, corev1.Node{})
	case types.MergePatchType:
		b, err = mergePatch(orig, data)
	default:
		return nil, errors.New("unsupported patch type " + string(pt))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var n corev1.Node
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if p.Subresource == "status" {
		n.ObjectMeta, n.Spec = old.ObjectMeta, old.Spec
	} else {
		n.Status = old.Status
	}
	f.nodes[name] = &n
	return n.DeepCopy(), nil
}

// mergePatch is RFC 7386's merge of patch into orig.
func mergePatch(orig, patch []byte) ([]byte, error) {
	var o, p any
	if err := json.Unmarshal(orig, &o); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	return json.Marshal(merge(o, p))
}

func merge(o, p any) any {
	pm, ok := p.(map[string]any)
	if !ok {
		return p
	}
	om, ok := o.(map[string]any)
	if !ok {
		om = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(om, k)
			continue
		}
		om[k] = merge(om[k], v)
	}
	return om
}

// Node returns a copy of the Node name, or nil.
func (f *Nodes) Node(name string) *corev1.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.nodes[name]; ok {
		return n.DeepCopy()
	}
	return nil
}

// Patches returns the patches sent, in order.
func (f *Nodes) Patches() []Patch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Patch(nil), f.patches...)
}

// Condition returns the condition of type typ of n, or nil.
func Condition(n *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
	if n == nil {
		return nil
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
