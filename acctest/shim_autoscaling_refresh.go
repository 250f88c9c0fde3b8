package acctest

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Test double: EC2 Auto Scaling instance refreshes, which moto 5.2.1 lacks
// (StartInstanceRefresh, DescribeInstanceRefreshes, CancelInstanceRefresh).
//
// StartInstanceRefresh replaces every instance of the group at once through
// moto's own TerminateInstanceInAutoScalingGroup (desired capacity kept), so
// that moto launches the replacements from the group's launch template as
// it now is, and the refresh is reported Successful straight away. A second
// start while one is reported InProgress (set HoldRefreshes) is refused with
// InstanceRefreshInProgress, as Auto Scaling does. Nothing in the product
// depends on this.

const autoScalingNamespace = "http://autoscaling.amazonaws.com/doc/2011-01-01/"

type shimRefresh struct {
	ID, Group, Status string
	MinHealthy        string
	Start             time.Time
}

type shimRefreshes struct {
	mu   sync.Mutex
	list []*shimRefresh
	hold bool
}

// RefreshDouble is the instance-refresh double a harness serves.
type RefreshDouble struct{ r *shimRefreshes }

// RegisterAutoScalingRefreshes makes the shim serve the instance-refresh
// operations and returns the double. It also works around a moto 5.2.1 bug
// that breaks CPU footprints: CreateLaunchTemplateVersion stores the user
// data unparsed, and every Auto Scaling launch from that version then fails
// (an AssertionError, answered 500). A new version of a footprint's launch
// template is forwarded without its user data; the first version keeps it.
func RegisterAutoScalingRefreshes(s *Shim) *RefreshDouble {
	r := &shimRefreshes{}
	s.OnReset(func() { r.mu.Lock(); r.list, r.hold = nil, false; r.mu.Unlock() })
	s.Handle("ec2", "CreateLaunchTemplateVersion", footprintTemplateVersion)
	registerAll(s, "autoscaling", map[string]HandlerFunc{
		"StartInstanceRefresh":      r.start,
		"DescribeInstanceRefreshes": r.describe,
		"CancelInstanceRefresh":     r.cancel,
	})
	return &RefreshDouble{r: r}
}

// HoldRefreshes makes refreshes started from now on stay InProgress
// (replacing nothing) until Release.
func (d *RefreshDouble) HoldRefreshes() { d.r.mu.Lock(); d.r.hold = true; d.r.mu.Unlock() }

// ReleaseRefreshes ends the hold: refreshes held InProgress end Cancelled
// (as a refresh stopped by hand), and new ones replace instances again.
func (d *RefreshDouble) ReleaseRefreshes() {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	d.r.hold = false
	for _, x := range d.r.list {
		if x.Status == "InProgress" {
			x.Status = "Cancelled"
		}
	}
}

// Started lists the groups refreshes were started for, in order, with the
// minimum healthy percentage each asked for ("group:percent").
func (d *RefreshDouble) Started() []string {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	var out []string
	for _, x := range d.r.list {
		out = append(out, x.Group+":"+x.MinHealthy)
	}
	return out
}

func (rs *shimRefreshes) start(w http.ResponseWriter, r *Request) {
	group := r.Form.Get("AutoScalingGroupName")
	rs.mu.Lock()
	for _, x := range rs.list {
		if x.Group == group && x.Status == "InProgress" {
			rs.mu.Unlock()
			WriteAWSError(w, r, http.StatusBadRequest, "InstanceRefreshInProgress", fmt.Sprintf("An Instance Refresh is already in progress and blocks the execution of this Instance Refresh (%s).", x.ID))
			return
		}
	}
	hold := rs.hold
	rs.mu.Unlock()
	ids, err := groupInstances(r, group)
	if err != nil {
		WriteAWSError(w, r, http.StatusBadRequest, "ValidationError", err.Error())
		return
	}
	ref := &shimRefresh{ID: "ir-" + shimHexID(16), Group: group, Status: "Successful", MinHealthy: r.Form.Get("Preferences.MinHealthyPercentage"), Start: time.Now().UTC()}
	if hold {
		ref.Status = "InProgress"
	} else {
		for _, id := range ids {
			form := url.Values{"Action": {"TerminateInstanceInAutoScalingGroup"}, "Version": {"2011-01-01"}, "InstanceId": {id}, "ShouldDecrementDesiredCapacity": {"false"}}
			resp, err := r.Forward([]byte(form.Encode()))
			if err != nil {
				WriteAWSError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
				return
			}
			_ = resp.Body.Close()
		}
	}
	rs.mu.Lock()
	rs.list = append(rs.list, ref)
	rs.mu.Unlock()
	writeQueryXML(w, "StartInstanceRefresh", fmt.Sprintf("<InstanceRefreshId>%s</InstanceRefreshId>", ref.ID))
}

func (rs *shimRefreshes) describe(w http.ResponseWriter, r *Request) {
	group := r.Form.Get("AutoScalingGroupName")
	want := shimIndexed(r.Form, "InstanceRefreshIds.member")
	rs.mu.Lock()
	var b strings.Builder
	for i := len(rs.list) - 1; i >= 0; i-- {
		x := rs.list[i]
		if x.Group != group || (len(want) > 0 && !contains(want, x.ID)) {
			continue
		}
		fmt.Fprintf(&b, "<member><InstanceRefreshId>%s</InstanceRefreshId><AutoScalingGroupName>%s</AutoScalingGroupName><Status>%s</Status><StartTime>%s</StartTime><PercentageComplete>100</PercentageComplete></member>",
			x.ID, xmlEscape(x.Group), x.Status, x.Start.Format(time.RFC3339))
	}
	rs.mu.Unlock()
	writeQueryXML(w, "DescribeInstanceRefreshes", "<InstanceRefreshes>"+b.String()+"</InstanceRefreshes>")
}

func (rs *shimRefreshes) cancel(w http.ResponseWriter, r *Request) {
	group := r.Form.Get("AutoScalingGroupName")
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, x := range rs.list {
		if x.Group == group && x.Status == "InProgress" {
			x.Status = "Cancelled"
			writeQueryXML(w, "CancelInstanceRefresh", "<InstanceRefreshId>"+x.ID+"</InstanceRefreshId>")
			return
		}
	}
	WriteAWSError(w, r, http.StatusBadRequest, "ActiveInstanceRefreshNotFound", "No in progress or pending Instance Refresh found for Auto Scaling group "+group)
}

// groupInstances asks moto for the instance ids of group.
func groupInstances(r *Request, group string) ([]string, error) {
	form := url.Values{"Action": {"DescribeAutoScalingGroups"}, "Version": {"2011-01-01"}, "AutoScalingGroupNames.member.1": {group}}
	resp, err := r.Forward([]byte(form.Encode()))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var out struct {
		Groups []struct {
			Name      string   `xml:"AutoScalingGroupName"`
			Instances []string `xml:"Instances>member>InstanceId"`
		} `xml:"DescribeAutoScalingGroupsResult>AutoScalingGroups>member"`
	}
	if err := xml.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("reading moto's DescribeAutoScalingGroups: %w", err)
	}
	for _, g := range out.Groups {
		if g.Name == group {
			return g.Instances, nil
		}
	}
	return nil, fmt.Errorf("AutoScalingGroup name not found - %s", group)
}

// writeQueryXML writes a successful query-protocol response (Auto Scaling).
func writeQueryXML(w http.ResponseWriter, action, inner string) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<%sResponse xmlns="%s"><%sResult>%s</%sResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`,
		action, autoScalingNamespace, action, inner, action, requestID(), action)
}

// footprintTemplateVersion forwards CreateLaunchTemplateVersion to moto,
// without the user data when the template is a CPU footprint's (its
// instance tags name the footprint).
func footprintTemplateVersion(w http.ResponseWriter, r *Request) {
	footprint := false
	for k, v := range r.Form {
		if strings.HasPrefix(k, "LaunchTemplateData.TagSpecification.") && strings.HasSuffix(k, ".Key") && len(v) > 0 && v[0] == "mlplatform:cpu-footprint" {
			footprint = true
		}
	}
	body := r.Body
	if footprint && r.Form.Get("LaunchTemplateData.UserData") != "" {
		form := url.Values{}
		for k, v := range r.Form {
			if k != "LaunchTemplateData.UserData" {
				form[k] = v
			}
		}
		body = []byte(form.Encode())
	}
	// Through the fault rules, as every call that reaches moto.
	var call Call
	r.shim.forward(w, r, &call, func(w http.ResponseWriter) {
		resp, err := r.Forward(body)
		if err != nil {
			WriteAWSError(w, r, http.StatusBadGateway, "ShimUpstreamError", err.Error())
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}
