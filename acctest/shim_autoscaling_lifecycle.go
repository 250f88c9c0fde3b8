package acctest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
)

// Test double: the launch lifecycle actions of EC2 Auto Scaling, which
// moto 5.2.1 lacks. moto stores lifecycle hooks (PutLifecycleHook,
// DescribeLifecycleHooks, DeleteLifecycleHook: those reach moto) but puts
// every instance InService at once, has no CompleteLifecycleAction, and
// ignores the hooks CreateAutoScalingGroup names
// (LifecycleHookSpecificationList).
//
// The double puts a create's hooks into moto as part of the create, and
// answers no DescribeAutoScalingGroups in between: Auto Scaling makes a
// group and its hooks in one step, so its first instances already wait.
//
// The double answers CompleteLifecycleAction and, over moto's
// DescribeAutoScalingGroups, shows an instance first seen while its group
// has an autoscaling:EC2_INSTANCE_LAUNCHING hook as Pending:Wait until its
// action is completed: CONTINUE puts it InService, ABANDON terminates it
// through moto's TerminateInstanceInAutoScalingGroup without decrementing
// the desired capacity, so that moto launches a replacement, as Auto
// Scaling does. A TerminateInstanceInAutoScalingGroup of an instance it
// abandoned gets Auto Scaling's answer for an instance no longer in a
// group, ValidationError (moto 5.2.1 fails it with a 500, StopIteration).
// Heartbeat timeouts are not played. Nothing in the product depends on
// this.

// LifecycleCompletion is one CompleteLifecycleAction the double answered.
type LifecycleCompletion struct {
	Group, Hook, InstanceID, Result string
}

// LifecycleDouble is the lifecycle-action double a test registered.
type LifecycleDouble struct {
	create    sync.RWMutex // held for writing while a group and its hooks are made
	mu        sync.Mutex
	waiting   map[string]string // instance id -> group, Pending:Wait
	seen      map[string]bool
	abandoned map[string]bool // terminated through ABANDON
	done      []LifecycleCompletion
}

// RegisterAutoScalingLifecycle makes the shim play launch lifecycle
// actions until remove is called.
func RegisterAutoScalingLifecycle(s *Shim) (d *LifecycleDouble, remove func()) {
	d = &LifecycleDouble{waiting: map[string]string{}, seen: map[string]bool{}, abandoned: map[string]bool{}}
	r1 := s.Handle("autoscaling", "CompleteLifecycleAction", d.complete)
	r2 := s.HandleOver("autoscaling", "DescribeAutoScalingGroups", d.describeGroups)
	r3 := s.HandleOver("autoscaling", "CreateAutoScalingGroup", d.createGroup)
	r4 := s.HandleOver("autoscaling", "TerminateInstanceInAutoScalingGroup", d.terminate)
	return d, func() { r4(); r3(); r2(); r1() }
}

// Completions lists the completed actions, in order.
func (d *LifecycleDouble) Completions() []LifecycleCompletion {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]LifecycleCompletion(nil), d.done...)
}

// Waiting reports whether instance id is held in Pending:Wait.
func (d *LifecycleDouble) Waiting(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.waiting[id]
	return ok
}

func (d *LifecycleDouble) complete(w http.ResponseWriter, r *Request) {
	c := LifecycleCompletion{Group: r.Form.Get("AutoScalingGroupName"), Hook: r.Form.Get("LifecycleHookName"),
		InstanceID: r.Form.Get("InstanceId"), Result: r.Form.Get("LifecycleActionResult")}
	if c.Result != "CONTINUE" && c.Result != "ABANDON" {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", fmt.Sprintf("LifecycleActionResult %q: use CONTINUE or ABANDON", c.Result))
		return
	}
	hooks, err := launchHooks(r, c.Group)
	if err != nil {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", err.Error())
		return
	}
	if !contains(hooks, c.Hook) {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", fmt.Sprintf("No Lifecycle Hook found with name %s for group %s", c.Hook, c.Group))
		return
	}
	d.mu.Lock()
	group, ok := d.waiting[c.InstanceID]
	if ok && group == c.Group {
		delete(d.waiting, c.InstanceID)
		d.done = append(d.done, c)
	}
	d.mu.Unlock()
	if !ok || group != c.Group {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", "No active Lifecycle Action found with instance ID "+c.InstanceID)
		return
	}
	if c.Result == "ABANDON" {
		form := url.Values{"Action": {"TerminateInstanceInAutoScalingGroup"}, "Version": {"2011-01-01"}, "InstanceId": {c.InstanceID}, "ShouldDecrementDesiredCapacity": {"false"}}
		resp, err := r.Forward([]byte(form.Encode()))
		if err != nil {
			WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
			return
		}
		_ = resp.Body.Close()
		d.mu.Lock()
		d.abandoned[c.InstanceID] = true
		d.mu.Unlock()
	}
	writeQueryXML(w, "CompleteLifecycleAction", "")
}

// terminate answers for an instance the double abandoned as Auto Scaling
// does for one no longer in its group; others go to moto.
func (d *LifecycleDouble) terminate(w http.ResponseWriter, r *Request, next HandlerFunc) {
	id := r.Form.Get("InstanceId")
	d.mu.Lock()
	gone := d.abandoned[id]
	d.mu.Unlock()
	if gone {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", "Instance Id not found - No managed instance found for instance ID: "+id)
		return
	}
	next(w, r)
}

// createGroup creates the group in moto and then puts the hooks the create
// names, before any DescribeAutoScalingGroups is answered.
func (d *LifecycleDouble) createGroup(w http.ResponseWriter, r *Request, next HandlerFunc) {
	d.create.Lock()
	defer d.create.Unlock()
	rec := httptest.NewRecorder()
	next(rec, r)
	if rec.Code == http.StatusOK {
		if err := putSpecifiedHooks(r); err != nil {
			WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
			return
		}
	}
	copyRecorded(w, rec)
}

// putSpecifiedHooks forwards a PutLifecycleHook for each hook of the
// create's LifecycleHookSpecificationList.
func putSpecifiedHooks(r *Request) error {
	for i := 1; ; i++ {
		p := fmt.Sprintf("LifecycleHookSpecificationList.member.%d.", i)
		name := r.Form.Get(p + "LifecycleHookName")
		if name == "" {
			return nil
		}
		form := url.Values{"Action": {"PutLifecycleHook"}, "Version": {"2011-01-01"},
			"AutoScalingGroupName": {r.Form.Get("AutoScalingGroupName")}, "LifecycleHookName": {name}}
		for _, k := range []string{"LifecycleTransition", "HeartbeatTimeout", "DefaultResult", "NotificationMetadata", "NotificationTargetARN", "RoleARN"} {
			if v := r.Form.Get(p + k); v != "" {
				form.Set(k, v)
			}
		}
		resp, err := r.Forward([]byte(form.Encode()))
		if err != nil {
			return fmt.Errorf("putting hook %s of the new group: %w", name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("putting hook %s of the new group: %s", name, strings.TrimSpace(string(b)))
		}
	}
}

// describeGroups answers from moto, with the instances waiting shown in
// Pending:Wait.
func (d *LifecycleDouble) describeGroups(w http.ResponseWriter, r *Request, next HandlerFunc) {
	d.create.RLock()
	defer d.create.RUnlock()
	rec := httptest.NewRecorder()
	next(rec, r)
	body := rec.Body.Bytes()
	if rec.Code == http.StatusOK {
		body = d.rewrite(r, body)
	}
	for k, vs := range rec.Header() {
		if k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

func (d *LifecycleDouble) rewrite(r *Request, body []byte) []byte {
	var out struct {
		Groups []struct {
			Name      string   `xml:"AutoScalingGroupName"`
			Instances []string `xml:"Instances>member>InstanceId"`
		} `xml:"DescribeAutoScalingGroupsResult>AutoScalingGroups>member"`
	}
	if err := xml.Unmarshal(body, &out); err != nil {
		return body
	}
	for _, g := range out.Groups {
		var fresh []string
		d.mu.Lock()
		for _, id := range g.Instances {
			if !d.seen[id] {
				fresh = append(fresh, id)
			}
		}
		d.mu.Unlock()
		if len(fresh) == 0 {
			continue
		}
		hooks, err := launchHooks(r, g.Name)
		if err != nil {
			continue // seen later
		}
		d.mu.Lock()
		for _, id := range fresh {
			d.seen[id] = true
			if len(hooks) > 0 {
				d.waiting[id] = g.Name
			}
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range d.waiting {
		body = pendingWait(body, id)
	}
	return body
}

// pendingWait rewrites instance id's LifecycleState to Pending:Wait.
func pendingWait(body []byte, id string) []byte {
	at := bytes.Index(body, []byte("<InstanceId>"+id+"</InstanceId>"))
	if at < 0 {
		return body
	}
	end := bytes.Index(body[at:], []byte("</member>"))
	const state = "<LifecycleState>InService</LifecycleState>"
	i := bytes.Index(body[at:], []byte(state))
	if i < 0 || end < 0 || i > end {
		return body
	}
	i += at
	return append(append(append([]byte{}, body[:i]...), "<LifecycleState>Pending:Wait</LifecycleState>"...), body[i+len(state):]...)
}

// launchHooks asks moto for the names of group's launch lifecycle hooks.
func launchHooks(r *Request, group string) ([]string, error) {
	form := url.Values{"Action": {"DescribeLifecycleHooks"}, "Version": {"2011-01-01"}, "AutoScalingGroupName": {group}}
	resp, err := r.Forward([]byte(form.Encode()))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("DescribeLifecycleHooks %s: %s", group, strings.TrimSpace(string(b)))
	}
	var out struct {
		Hooks []struct {
			Name       string `xml:"LifecycleHookName"`
			Transition string `xml:"LifecycleTransition"`
		} `xml:"DescribeLifecycleHooksResult>LifecycleHooks>member"`
	}
	if err := xml.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("reading moto's DescribeLifecycleHooks: %w", err)
	}
	var names []string
	for _, h := range out.Hooks {
		if h.Transition == "autoscaling:EC2_INSTANCE_LAUNCHING" {
			names = append(names, h.Name)
		}
	}
	return names, nil
}
