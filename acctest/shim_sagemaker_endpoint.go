package acctest

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Test double: SageMaker endpoint configs and endpoints.
//
// moto 5.2.1 lacks UpdateEndpoint, and its CreateEndpointConfig rejects every
// instance type newer than its own list (ml.g5, ml.g6, ml.p5 and the other
// current GPU types). Because an endpoint refers to its config, the shim
// serves both from its own in-memory store, wiped on Reset; models stay with
// moto (CreateModel, DescribeModel and DeleteModel work there). The tagging
// calls of endpoint and endpoint config ARNs are served here too; every other
// ARN goes on to the handler below (the feature group double, or moto).
//
// Like SageMaker, the double is asynchronous in a small way so that waiters
// run for real: a new endpoint is Creating on the first describe and
// InService after it; an update is Updating once and then InService on the
// new config, or, while RollBack is set, InService on the old config with
// a FailureReason (SageMaker's silent rollback); a deleted endpoint is
// Deleting once and then gone.

// ShimEndpoints is the endpoint double's state and its controls.
type ShimEndpoints struct {
	mu        sync.Mutex
	configs   map[string]*shimEndpointConfig // region/name
	endpoints map[string]*shimEndpoint       // region/name
	rollback  string
}

type shimEndpointConfig struct {
	name, arn string
	request   map[string]any
	tags      []shimTag
	created   time.Time
}

type shimEndpoint struct {
	name, arn, config string
	pendingConfig     string // the config an update moves to
	status, pending   string // pending: what the next describe turns status into
	reason            string
	counts            map[string]int // variant -> desired instance count, when changed outside
	tags              []shimTag
	created, modified time.Time
	deployment        map[string]any
}

// shimInstanceTypeRE accepts every ml.* type, current GPU types included.
var shimInstanceTypeRE = regexp.MustCompile(`^ml\.[a-z0-9-]+\.(medium|large|xlarge|[0-9]+xlarge)$`)

// RegisterSageMakerEndpoints makes the shim serve endpoint configs and
// endpoints (and their tags), and returns the double.
func RegisterSageMakerEndpoints(s *Shim) *ShimEndpoints {
	d := &ShimEndpoints{}
	d.reset()
	s.OnReset(d.reset)
	for action, h := range map[string]HandlerFunc{
		"CreateEndpointConfig":               d.createConfig,
		"DescribeEndpointConfig":             d.describeConfig,
		"DeleteEndpointConfig":               d.deleteConfig,
		"ListEndpointConfigs":                d.listConfigs,
		"CreateEndpoint":                     d.createEndpoint,
		"DescribeEndpoint":                   d.describeEndpoint,
		"UpdateEndpoint":                     d.updateEndpoint,
		"UpdateEndpointWeightsAndCapacities": d.updateCapacities,
		"DeleteEndpoint":                     d.deleteEndpoint,
	} {
		s.Handle("sagemaker", action, h)
	}
	s.HandleOver("sagemaker", "AddTags", d.addTags)
	s.HandleOver("sagemaker", "ListTags", d.listTags)
	s.HandleOver("sagemaker", "DeleteTags", d.deleteTags)
	return d
}

// RollBack makes every update from now on end rolled back with reason, as
// SageMaker does when an auto-rollback alarm fires or the new fleet fails
// its health checks; "" ends it. Reset ends it too.
func (d *ShimEndpoints) RollBack(reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rollback = reason
}

// ScaleVariant sets a variant's instance count as if it were changed outside
// the provider (the console, or UpdateEndpointWeightsAndCapacities).
func (d *ShimEndpoints) ScaleVariant(region, endpoint, variant string, count int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.endpoints[region+"/"+endpoint]
	if e == nil {
		return fmt.Errorf("no endpoint %s in %s", endpoint, region)
	}
	e.counts[variant] = count
	return nil
}

// Configs returns the names of the endpoint configs in region, sorted.
func (d *ShimEndpoints) Configs(region string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k, c := range d.configs {
		if strings.HasPrefix(k, region+"/") {
			out = append(out, c.name)
		}
	}
	sort.Strings(out)
	return out
}

func (d *ShimEndpoints) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.configs = map[string]*shimEndpointConfig{}
	d.endpoints = map[string]*shimEndpoint{}
	d.rollback = ""
}

func smValidation(w http.ResponseWriter, r *Request, format string, args ...any) {
	WriteAWSError(w, r, http.StatusBadRequest, "ValidationException", fmt.Sprintf(format, args...))
}

func smARN(r *Request, kind, name string) string {
	return fmt.Sprintf("arn:aws:sagemaker:%s:%s:%s/%s", r.Region, ShimAccountID, kind, strings.ToLower(name))
}

func (d *ShimEndpoints) createConfig(w http.ResponseWriter, r *Request) {
	var in map[string]any
	if err := r.DecodeJSON(&in); err != nil {
		smValidation(w, r, "%v", err)
		return
	}
	name, _ := in["EndpointConfigName"].(string)
	variants, _ := in["ProductionVariants"].([]any)
	if name == "" || len(variants) == 0 {
		smValidation(w, r, "EndpointConfigName and ProductionVariants are required")
		return
	}
	for _, v := range variants {
		m, _ := v.(map[string]any)
		if t, ok := m["InstanceType"].(string); ok && !shimInstanceTypeRE.MatchString(t) {
			smValidation(w, r, "Value '%s' at 'instanceType' failed to satisfy constraint: Member must satisfy enum value set", t)
			return
		}
		if _, ok := m["InstanceType"]; !ok && m["ServerlessConfig"] == nil {
			smValidation(w, r, "Either InstanceType or ServerlessConfig must be given for variant %v", m["VariantName"])
			return
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k := r.Region + "/" + name
	arn := smARN(r, "endpoint-config", name)
	if d.configs[k] != nil {
		smValidation(w, r, "Cannot create already existing endpoint configuration %q.", arn)
		return
	}
	d.configs[k] = &shimEndpointConfig{name: name, arn: arn, request: in, tags: shimTags(in["Tags"]), created: time.Now()}
	WriteJSON(w, map[string]any{"EndpointConfigArn": arn})
}

func (d *ShimEndpoints) describeConfig(w http.ResponseWriter, r *Request) {
	var in struct{ EndpointConfigName string }
	_ = r.DecodeJSON(&in)
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.configs[r.Region+"/"+in.EndpointConfigName]
	if c == nil {
		smValidation(w, r, "Could not find endpoint configuration %q.", smARN(r, "endpoint-config", in.EndpointConfigName))
		return
	}
	out := map[string]any{
		"EndpointConfigName": c.name,
		"EndpointConfigArn":  c.arn,
		"ProductionVariants": c.request["ProductionVariants"],
		"CreationTime":       epochSeconds(c.created),
	}
	for _, k := range []string{"DataCaptureConfig", "KmsKeyId"} {
		if v, ok := c.request[k]; ok {
			out[k] = v
		}
	}
	WriteJSON(w, out)
}

// listConfigs serves ListEndpointConfigs: NameContains is honoured, the
// answer comes in one page, by name.
func (d *ShimEndpoints) listConfigs(w http.ResponseWriter, r *Request) {
	var in struct{ NameContains string }
	_ = r.DecodeJSON(&in)
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []map[string]any{}
	for k, c := range d.configs {
		if strings.HasPrefix(k, r.Region+"/") && strings.Contains(c.name, in.NameContains) {
			out = append(out, map[string]any{"EndpointConfigName": c.name, "EndpointConfigArn": c.arn, "CreationTime": epochSeconds(c.created)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i]["EndpointConfigName"].(string) < out[j]["EndpointConfigName"].(string)
	})
	WriteJSON(w, map[string]any{"EndpointConfigs": out})
}

func (d *ShimEndpoints) deleteConfig(w http.ResponseWriter, r *Request) {
	var in struct{ EndpointConfigName string }
	_ = r.DecodeJSON(&in)
	d.mu.Lock()
	defer d.mu.Unlock()
	k := r.Region + "/" + in.EndpointConfigName
	if d.configs[k] == nil {
		smValidation(w, r, "Could not find endpoint configuration %q.", smARN(r, "endpoint-config", in.EndpointConfigName))
		return
	}
	delete(d.configs, k)
	WriteJSON(w, map[string]any{})
}

func (d *ShimEndpoints) createEndpoint(w http.ResponseWriter, r *Request) {
	var in map[string]any
	if err := r.DecodeJSON(&in); err != nil {
		smValidation(w, r, "%v", err)
		return
	}
	name, _ := in["EndpointName"].(string)
	config, _ := in["EndpointConfigName"].(string)
	d.mu.Lock()
	defer d.mu.Unlock()
	arn := smARN(r, "endpoint", name)
	if d.endpoints[r.Region+"/"+name] != nil {
		smValidation(w, r, "Cannot create already existing endpoint %q.", arn)
		return
	}
	if d.configs[r.Region+"/"+config] == nil {
		smValidation(w, r, "Could not find endpoint configuration %q.", smARN(r, "endpoint-config", config))
		return
	}
	now := time.Now()
	d.endpoints[r.Region+"/"+name] = &shimEndpoint{name: name, arn: arn, config: config, status: "Creating", pending: "InService",
		counts: map[string]int{}, tags: shimTags(in["Tags"]), created: now, modified: now}
	WriteJSON(w, map[string]any{"EndpointArn": arn})
}

func (d *ShimEndpoints) describeEndpoint(w http.ResponseWriter, r *Request) {
	var in struct{ EndpointName string }
	_ = r.DecodeJSON(&in)
	d.mu.Lock()
	defer d.mu.Unlock()
	k := r.Region + "/" + in.EndpointName
	e := d.endpoints[k]
	if e == nil {
		smValidation(w, r, "Could not find endpoint %q.", smARN(r, "endpoint", in.EndpointName))
		return
	}
	out := d.describe(e)
	// Settle after this answer: the next describe sees the outcome.
	switch {
	case e.status == "Deleting":
		delete(d.endpoints, k)
	case e.status == "Updating" && d.rollback != "":
		e.status, e.reason, e.pendingConfig = "InService", d.rollback, ""
	case e.status == "Updating":
		e.status, e.config, e.pendingConfig, e.reason, e.counts = "InService", e.pendingConfig, "", "", map[string]int{}
	case e.pending != "":
		e.status, e.pending = e.pending, ""
	}
	e.modified = time.Now()
	WriteJSON(w, out)
}

func (d *ShimEndpoints) describe(e *shimEndpoint) map[string]any {
	out := map[string]any{
		"EndpointName":       e.name,
		"EndpointArn":        e.arn,
		"EndpointConfigName": e.config,
		"EndpointStatus":     e.status,
		"CreationTime":       epochSeconds(e.created),
		"LastModifiedTime":   epochSeconds(e.modified),
	}
	if e.reason != "" {
		out["FailureReason"] = e.reason
	}
	if c := d.configs[strings.SplitN(e.arn, ":", 5)[3]+"/"+e.config]; c != nil {
		var variants []map[string]any
		vs, _ := c.request["ProductionVariants"].([]any)
		for _, v := range vs {
			m, _ := v.(map[string]any)
			name, _ := m["VariantName"].(string)
			weight := m["InitialVariantWeight"]
			if weight == nil {
				weight = 1.0
			}
			sum := map[string]any{"VariantName": name, "CurrentWeight": weight, "DesiredWeight": weight}
			if sc, ok := m["ServerlessConfig"]; ok {
				sum["CurrentServerlessConfig"], sum["DesiredServerlessConfig"] = sc, sc
			} else {
				n := m["InitialInstanceCount"]
				if c, ok := e.counts[name]; ok {
					n = c
				}
				sum["CurrentInstanceCount"], sum["DesiredInstanceCount"] = n, n
			}
			variants = append(variants, sum)
		}
		out["ProductionVariants"] = variants
		if dc, ok := c.request["DataCaptureConfig"].(map[string]any); ok {
			out["DataCaptureConfig"] = map[string]any{
				"EnableCapture": dc["EnableCapture"], "CaptureStatus": "Started",
				"CurrentSamplingPercentage": dc["InitialSamplingPercentage"], "DestinationS3Uri": dc["DestinationS3Uri"], "KmsKeyId": dc["KmsKeyId"],
			}
		}
	}
	if e.deployment != nil {
		out["LastDeploymentConfig"] = e.deployment
	}
	return out
}

func (d *ShimEndpoints) updateEndpoint(w http.ResponseWriter, r *Request) {
	var in map[string]any
	if err := r.DecodeJSON(&in); err != nil {
		smValidation(w, r, "%v", err)
		return
	}
	name, _ := in["EndpointName"].(string)
	config, _ := in["EndpointConfigName"].(string)
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.endpoints[r.Region+"/"+name]
	switch {
	case e == nil:
		smValidation(w, r, "Could not find endpoint %q.", smARN(r, "endpoint", name))
		return
	case e.status != "InService":
		smValidation(w, r, "Cannot update in-progress endpoint %q.", e.arn)
		return
	case d.configs[r.Region+"/"+config] == nil:
		smValidation(w, r, "Could not find endpoint configuration %q.", smARN(r, "endpoint-config", config))
		return
	}
	e.status, e.pendingConfig, e.reason = "Updating", config, ""
	if dc, ok := in["DeploymentConfig"].(map[string]any); ok {
		e.deployment = dc
	}
	WriteJSON(w, map[string]any{"EndpointArn": e.arn})
}

func (d *ShimEndpoints) updateCapacities(w http.ResponseWriter, r *Request) {
	var in struct {
		EndpointName                string
		DesiredWeightsAndCapacities []struct {
			VariantName          string
			DesiredInstanceCount *int
		}
	}
	if err := r.DecodeJSON(&in); err != nil {
		smValidation(w, r, "%v", err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.endpoints[r.Region+"/"+in.EndpointName]
	if e == nil {
		smValidation(w, r, "Could not find endpoint %q.", smARN(r, "endpoint", in.EndpointName))
		return
	}
	for _, c := range in.DesiredWeightsAndCapacities {
		if c.DesiredInstanceCount != nil {
			e.counts[c.VariantName] = *c.DesiredInstanceCount
		}
	}
	WriteJSON(w, map[string]any{"EndpointArn": e.arn})
}

func (d *ShimEndpoints) deleteEndpoint(w http.ResponseWriter, r *Request) {
	var in struct{ EndpointName string }
	_ = r.DecodeJSON(&in)
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.endpoints[r.Region+"/"+in.EndpointName]
	if e == nil {
		smValidation(w, r, "Could not find endpoint %q.", smARN(r, "endpoint", in.EndpointName))
		return
	}
	e.status, e.pending = "Deleting", ""
	WriteJSON(w, map[string]any{})
}

// tagged returns the tags of an endpoint or endpoint config ARN, or nil
// when the double does not hold it. d.mu must be held.
func (d *ShimEndpoints) tagged(arn string) *[]shimTag {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 {
		return nil
	}
	kind, name, _ := strings.Cut(parts[5], "/")
	for _, e := range d.endpoints {
		if kind == "endpoint" && strings.EqualFold(e.name, name) && e.arn == arn {
			return &e.tags
		}
	}
	for _, c := range d.configs {
		if kind == "endpoint-config" && strings.EqualFold(c.name, name) && c.arn == arn {
			return &c.tags
		}
	}
	return nil
}

func (d *ShimEndpoints) addTags(w http.ResponseWriter, r *Request, next HandlerFunc) {
	var in struct {
		ResourceArn string
		Tags        []shimTag
	}
	_ = r.DecodeJSON(&in)
	d.mu.Lock()
	tags := d.tagged(in.ResourceArn)
	if tags == nil {
		d.mu.Unlock()
		d.notHeld(w, r, in.ResourceArn, next)
		return
	}
	for _, t := range in.Tags {
		*tags = append(removeTag(*tags, t.Key), t)
	}
	d.mu.Unlock()
	WriteJSON(w, map[string]any{"Tags": in.Tags})
}

func (d *ShimEndpoints) listTags(w http.ResponseWriter, r *Request, next HandlerFunc) {
	var in struct{ ResourceArn string }
	_ = r.DecodeJSON(&in)
	d.mu.Lock()
	tags := d.tagged(in.ResourceArn)
	if tags == nil {
		d.mu.Unlock()
		d.notHeld(w, r, in.ResourceArn, next)
		return
	}
	out := []map[string]string{}
	for _, t := range *tags {
		out = append(out, map[string]string{"Key": t.Key, "Value": t.Value})
	}
	d.mu.Unlock()
	WriteJSON(w, map[string]any{"Tags": out})
}

func (d *ShimEndpoints) deleteTags(w http.ResponseWriter, r *Request, next HandlerFunc) {
	var in struct {
		ResourceArn string
		TagKeys     []string
	}
	_ = r.DecodeJSON(&in)
	d.mu.Lock()
	tags := d.tagged(in.ResourceArn)
	if tags == nil {
		d.mu.Unlock()
		d.notHeld(w, r, in.ResourceArn, next)
		return
	}
	for _, k := range in.TagKeys {
		*tags = removeTag(*tags, k)
	}
	d.mu.Unlock()
	WriteJSON(w, map[string]any{})
}

// notHeld answers a tagging call on an ARN the double does not hold: an
// endpoint or endpoint config ARN is not found (as SageMaker answers), any
// other goes to next.
func (d *ShimEndpoints) notHeld(w http.ResponseWriter, r *Request, arn string, next HandlerFunc) {
	if strings.Contains(arn, ":endpoint/") || strings.Contains(arn, ":endpoint-config/") {
		smValidation(w, r, "Could not find resource %q.", arn)
		return
	}
	next(w, r)
}

func removeTag(tags []shimTag, key string) []shimTag {
	out := tags[:0:0]
	for _, t := range tags {
		if t.Key != key {
			out = append(out, t)
		}
	}
	return out
}
