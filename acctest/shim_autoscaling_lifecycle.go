package acctest

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
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
// Terminate actions too (autoscaling:EC2_INSTANCE_TERMINATING hooks; a
// forced DeleteAutoScalingGroup terminates the instances held):
// moto terminates the instances a lower desired capacity removes at
// once. When the group has a terminating hook, the double takes an
// UpdateAutoScalingGroup or SetDesiredCapacity that scales in first: it
// chooses the instances (the last ones moto lists, in service), detaches
// them from moto's group with the desired capacity decremented, so that
// moto terminates none, forwards the update, and shows them in the group
// as Terminating:Wait until their action is completed; then it
// terminates them in EC2 (Terminate, the fixture client's call). Heartbeat
// timeouts are not played. Nothing in the product depends on this.

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
	// terminating holds the instances in Terminating:Wait: id -> the
	// group and its member element as moto last listed it.
	terminating map[string]heldInstance
	// Terminate terminates an instance in EC2 once its terminate action
	// is completed; the registrant sets it.
	Terminate func(ctx context.Context, id string) error
}

type heldInstance struct {
	group  string
	member []byte
}

// RegisterAutoScalingLifecycle makes the shim play launch lifecycle
// actions until remove is called.
func RegisterAutoScalingLifecycle(s *Shim) (d *LifecycleDouble, remove func()) {
	d = &LifecycleDouble{waiting: map[string]string{}, seen: map[string]bool{}, abandoned: map[string]bool{}, terminating: map[string]heldInstance{}}
	r1 := s.Handle("autoscaling", "CompleteLifecycleAction", d.complete)
	r2 := s.HandleOver("autoscaling", "DescribeAutoScalingGroups", d.describeGroups)
	r3 := s.HandleOver("autoscaling", "CreateAutoScalingGroup", d.createGroup)
	r4 := s.HandleOver("autoscaling", "TerminateInstanceInAutoScalingGroup", d.terminate)
	r5 := s.HandleOver("autoscaling", "UpdateAutoScalingGroup", d.scaleIn)
	r6 := s.HandleOver("autoscaling", "SetDesiredCapacity", d.scaleIn)
	r7 := s.HandleOver("autoscaling", "DeleteAutoScalingGroup", d.deleteGroup)
	return d, func() {
		r7()
		r6()
		r5()
		r4()
		r3()
		r2()
		r1()
	}
}

// Terminating reports whether instance id is held in Terminating:Wait.
func (d *LifecycleDouble) Terminating(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.terminating[id]
	return ok
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
	hooks, err := groupHooks(r, c.Group, "autoscaling:EC2_INSTANCE_LAUNCHING")
	if err != nil {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", err.Error())
		return
	}
	ends, err := groupHooks(r, c.Group, "autoscaling:EC2_INSTANCE_TERMINATING")
	if err != nil {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", err.Error())
		return
	}
	if contains(ends, c.Hook) {
		d.completeTerminate(w, r, c)
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

// completeTerminate ends instance c.InstanceID's Terminating:Wait: it is
// terminated, whatever the result.
func (d *LifecycleDouble) completeTerminate(w http.ResponseWriter, r *Request, c LifecycleCompletion) {
	d.mu.Lock()
	h, ok := d.terminating[c.InstanceID]
	d.mu.Unlock()
	if !ok || h.group != c.Group {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", "No active Lifecycle Action found with instance ID "+c.InstanceID)
		return
	}
	if d.Terminate == nil {
		WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", "lifecycle double: no Terminate set")
		return
	}
	if err := d.Terminate(r.HTTP.Context(), c.InstanceID); err != nil {
		WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
		return
	}
	d.mu.Lock()
	delete(d.terminating, c.InstanceID)
	d.done = append(d.done, c)
	d.mu.Unlock()
	writeQueryXML(w, "CompleteLifecycleAction", "")
}

// deleteGroup deletes the group in moto and terminates the instances it
// held in Terminating:Wait, as a forced delete does (their actions end
// with the group).
func (d *LifecycleDouble) deleteGroup(w http.ResponseWriter, r *Request, next HandlerFunc) {
	rec := httptest.NewRecorder()
	next(rec, r)
	if rec.Code == http.StatusOK && d.Terminate != nil {
		group := r.Form.Get("AutoScalingGroupName")
		d.mu.Lock()
		var held []string
		for id, h := range d.terminating {
			if h.group == group {
				held = append(held, id)
				delete(d.terminating, id)
			}
		}
		d.mu.Unlock()
		for _, id := range held {
			if err := d.Terminate(r.HTTP.Context(), id); err != nil {
				WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
				return
			}
		}
	}
	copyRecorded(w, rec)
}

// scaleIn holds the instances a lower desired capacity removes from a
// group with a terminating hook in Terminating:Wait; other updates go to
// moto as they are.
func (d *LifecycleDouble) scaleIn(w http.ResponseWriter, r *Request, next HandlerFunc) {
	group, want := r.Form.Get("AutoScalingGroupName"), r.Form.Get("DesiredCapacity")
	if want == "" {
		next(w, r)
		return
	}
	desired, err := strconv.Atoi(want)
	ends, herr := groupHooks(r, group, "autoscaling:EC2_INSTANCE_TERMINATING")
	if err != nil || herr != nil || len(ends) == 0 {
		next(w, r)
		return
	}
	d.create.Lock() // no DescribeAutoScalingGroups answered in between
	defer d.create.Unlock()
	in, body, err := motoGroupInstances(r, group)
	if err != nil {
		WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
		return
	}
	d.mu.Lock()
	var live []string
	for _, i := range in {
		if i.State == "InService" && d.waiting[i.ID] == "" {
			live = append(live, i.ID)
		}
	}
	d.mu.Unlock()
	if len(live) > desired {
		chosen := live[desired:]
		if err := d.hold(r, group, "true", chosen, body); err != nil {
			WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
			return
		}
	}
	next(w, r)
}

// hold detaches ids from group in moto (decrement: "true" lowers its
// desired capacity, else moto launches replacements) and shows them as
// Terminating:Wait from then on, with their member elements of body (a
// DescribeAutoScalingGroups answer taken before).
func (d *LifecycleDouble) hold(r *Request, group, decrement string, ids []string, body []byte) error {
	form := url.Values{"Action": {"DetachInstances"}, "Version": {"2011-01-01"}, "AutoScalingGroupName": {group}, "ShouldDecrementDesiredCapacity": {decrement}}
	for i, id := range ids {
		form.Set(fmt.Sprintf("InstanceIds.member.%d", i+1), id)
	}
	resp, err := r.Forward([]byte(form.Encode()))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("detaching the instances to hold: %s", strings.TrimSpace(string(b)))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.terminating[id] = heldInstance{group: group, member: terminatingMember(instanceMember(body, id))}
	}
	return nil
}

// groupInstance is one instance of a group as moto lists it.
type groupInstance struct {
	ID    string `xml:"InstanceId"`
	State string `xml:"LifecycleState"`
}

// motoGroupInstances asks moto for group's instances, in its order, and
// returns its answer too.
func motoGroupInstances(r *Request, group string) ([]groupInstance, []byte, error) {
	form := url.Values{"Action": {"DescribeAutoScalingGroups"}, "Version": {"2011-01-01"}, "AutoScalingGroupNames.member.1": {group}}
	resp, err := r.Forward([]byte(form.Encode()))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("DescribeAutoScalingGroups %s: %s", group, strings.TrimSpace(string(b)))
	}
	var out struct {
		Instances []groupInstance `xml:"DescribeAutoScalingGroupsResult>AutoScalingGroups>member>Instances>member"`
	}
	if err := xml.Unmarshal(b, &out); err != nil {
		return nil, nil, fmt.Errorf("reading moto's DescribeAutoScalingGroups: %w", err)
	}
	return out.Instances, b, nil
}

// instanceMember is instance id's <member> element in a
// DescribeAutoScalingGroups answer; nil when absent.
func instanceMember(body []byte, id string) []byte {
	at := bytes.Index(body, []byte("<InstanceId>"+id+"</InstanceId>"))
	if at < 0 {
		return nil
	}
	start := bytes.LastIndex(body[:at], []byte("<member>"))
	end := bytes.Index(body[at:], []byte("</member>"))
	if start < 0 || end < 0 {
		return nil
	}
	return append([]byte{}, body[start:at+end+len("</member>")]...)
}

// terminatingMember is member with its LifecycleState Terminating:Wait.
func terminatingMember(member []byte) []byte {
	i := bytes.Index(member, []byte("<LifecycleState>"))
	j := bytes.Index(member, []byte("</LifecycleState>"))
	if i < 0 || j < i {
		return member
	}
	return append(append(append([]byte{}, member[:i]...), "<LifecycleState>Terminating:Wait"...), member[j:]...)
}

// addTerminating shows the instances held for group in its Instances.
func addTerminating(body []byte, group string, members [][]byte) []byte {
	if len(members) == 0 {
		return body
	}
	name := []byte("<AutoScalingGroupName>" + group + "</AutoScalingGroupName>")
	at := bytes.Index(body, name)
	if at < 0 {
		return body
	}
	rest := body[at:]
	nextGroup := bytes.Index(rest[len(name):], []byte("<AutoScalingGroupName>"))
	if nextGroup < 0 {
		nextGroup = len(rest)
	} else {
		nextGroup += len(name)
	}
	ins := bytes.Join(members, nil)
	var out []byte
	if i := bytes.Index(rest[:nextGroup], []byte("</Instances>")); i >= 0 {
		out = append(append(append(out, body[:at+i]...), ins...), body[at+i:]...)
	} else if i := bytes.Index(rest[:nextGroup], []byte("<Instances/>")); i >= 0 {
		out = append(append(append(append(out, body[:at+i]...), "<Instances>"...), ins...), "</Instances>"...)
		out = append(out, body[at+i+len("<Instances/>"):]...)
	} else {
		i := len(name)
		out = append(append(append(append(out, body[:at+i]...), "<Instances>"...), ins...), "</Instances>"...)
		out = append(out, body[at+i:]...)
	}
	return out
}

// terminate answers for an instance the double abandoned as Auto Scaling
// does for one no longer in its group; an instance of a group with a
// terminating hook is held in Terminating:Wait (detached from moto's
// group, which launches its replacement unless the call decrements the
// desired capacity); others go to moto.
func (d *LifecycleDouble) terminate(w http.ResponseWriter, r *Request, next HandlerFunc) {
	id := r.Form.Get("InstanceId")
	d.mu.Lock()
	gone := d.abandoned[id]
	_, held := d.terminating[id]
	d.mu.Unlock()
	if gone || held {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", "Instance Id not found - No managed instance found for instance ID: "+id)
		return
	}
	group, err := instanceGroup(r, id)
	if err != nil || group == "" {
		next(w, r)
		return
	}
	ends, err := groupHooks(r, group, "autoscaling:EC2_INSTANCE_TERMINATING")
	if err != nil || len(ends) == 0 {
		next(w, r)
		return
	}
	d.create.Lock()
	defer d.create.Unlock()
	_, body, err := motoGroupInstances(r, group)
	if err != nil {
		WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
		return
	}
	if err := d.hold(r, group, r.Form.Get("ShouldDecrementDesiredCapacity"), []string{id}, body); err != nil {
		WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
		return
	}
	writeQueryXML(w, "TerminateInstanceInAutoScalingGroup", "<Activity><ActivityId>held-"+id+"</ActivityId><AutoScalingGroupName>"+group+
		"</AutoScalingGroupName><Cause>held in Terminating:Wait by the group's terminate hook (lifecycle double)</Cause><StatusCode>WaitingForELBConnectionDraining</StatusCode></Activity>")
}

// instanceGroup asks moto which group instance id belongs to; "" none.
func instanceGroup(r *Request, id string) (string, error) {
	form := url.Values{"Action": {"DescribeAutoScalingInstances"}, "Version": {"2011-01-01"}, "InstanceIds.member.1": {id}}
	resp, err := r.Forward([]byte(form.Encode()))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("DescribeAutoScalingInstances %s: %v %s", id, err, strings.TrimSpace(string(b)))
	}
	var out struct {
		Groups []string `xml:"DescribeAutoScalingInstancesResult>AutoScalingInstances>member>AutoScalingGroupName"`
	}
	if err := xml.Unmarshal(b, &out); err != nil || len(out.Groups) == 0 {
		return "", err
	}
	return out.Groups[0], nil
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
		hooks, err := groupHooks(r, g.Name, "autoscaling:EC2_INSTANCE_LAUNCHING")
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
	for _, g := range out.Groups {
		var held [][]byte
		for _, h := range d.terminating {
			if h.group == g.Name && h.member != nil {
				held = append(held, h.member)
			}
		}
		body = addTerminating(body, g.Name, held)
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

// groupHooks asks moto for the names of group's lifecycle hooks of
// transition.
func groupHooks(r *Request, group, transition string) ([]string, error) {
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
		if h.Transition == transition {
			names = append(names, h.Name)
		}
	}
	return names, nil
}
