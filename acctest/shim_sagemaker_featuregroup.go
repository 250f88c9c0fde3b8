package acctest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Test double: SageMaker feature groups.
//
// moto 5.2.1 implements CreateFeatureGroup and DescribeFeatureGroup only: it
// lacks DeleteFeatureGroup, UpdateFeatureGroup and ListFeatureGroups, answers
// a missing group with a 500, does not echo the online store, description or
// throughput back, and cannot tag a feature group. Patching moto's answers
// is not enough: without DeleteFeatureGroup a name, once created in moto, can
// never be created again, so replacing a group (delete, then create under the
// same name) cannot work against moto's store. The shim therefore serves
// every feature group operation itself, from its own in-memory store that is
// wiped on Reset, and forwards the tagging calls of other resources to moto.
//
// Like SageMaker, the double is asynchronous in a small way so that waiters
// run for real: a new group is Creating on the first describe and Created
// after it; a deleted group is Deleting once and then gone; an update is
// InProgress once and then Successful.

// ShimAccountID is the account moto and the shim use in ARNs.
const ShimAccountID = "123456789012"

// RegisterSageMakerFeatureGroups makes the shim serve the SageMaker feature
// group operations (Create, Describe, Update, Delete, List) and the tagging
// calls on feature group ARNs, and returns a function that removes them.
func RegisterSageMakerFeatureGroups(s *Shim) (remove func()) {
	fg := &shimFeatureGroups{groups: map[string]*shimFeatureGroup{}}
	s.OnReset(fg.reset)
	var removes []func()
	for action, h := range map[string]HandlerFunc{
		"CreateFeatureGroup":   fg.create,
		"DescribeFeatureGroup": fg.describe,
		"UpdateFeatureGroup":   fg.update,
		"DeleteFeatureGroup":   fg.delete,
		"ListFeatureGroups":    fg.list,
		"AddTags":              fg.addTags,
		"ListTags":             fg.listTags,
		"DeleteTags":           fg.deleteTags,
	} {
		removes = append(removes, s.Handle("sagemaker", action, h))
	}
	return func() {
		for _, r := range removes {
			r()
		}
	}
}

type shimFeatureGroups struct {
	mu     sync.Mutex
	groups map[string]*shimFeatureGroup // region/lower-case name
}

type shimFeatureGroup struct {
	name, arn, region string
	request           map[string]any // the CreateFeatureGroup request, as sent
	features          []any
	online            map[string]any
	offline           map[string]any
	throughput        map[string]any
	tags              []shimTag
	created, modified time.Time

	status        string // Creating, Created, Deleting
	pendingStatus string // what the next describe turns status into
	lastUpdate    map[string]any
	updatePending bool
}

type shimTag struct{ Key, Value string }

func (s *shimFeatureGroups) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups = map[string]*shimFeatureGroup{}
}

func fgKey(region, name string) string { return region + "/" + strings.ToLower(name) }

func fgNotFound(w http.ResponseWriter, r *Request, name string) {
	WriteAWSError(w, r, http.StatusBadRequest, "ResourceNotFound",
		fmt.Sprintf("Resource Not Found: Amazon SageMaker can't find a FeatureGroup with name %s", name))
}

func fgInvalid(w http.ResponseWriter, r *Request, format string, args ...any) {
	WriteAWSError(w, r, http.StatusBadRequest, "ValidationException", fmt.Sprintf(format, args...))
}

// lookup finds a group by name or ARN. s.mu must be held.
func (s *shimFeatureGroups) lookup(region, nameOrARN string) *shimFeatureGroup {
	name := nameOrARN
	if i := strings.Index(nameOrARN, ":feature-group/"); i >= 0 && strings.HasPrefix(nameOrARN, "arn:") {
		name = nameOrARN[i+len(":feature-group/"):]
		if parts := strings.Split(nameOrARN, ":"); len(parts) > 3 {
			region = parts[3]
		}
	}
	return s.groups[fgKey(region, name)]
}

func (s *shimFeatureGroups) create(w http.ResponseWriter, r *Request) {
	var in map[string]any
	if err := r.DecodeJSON(&in); err != nil {
		fgInvalid(w, r, "%v", err)
		return
	}
	name, _ := in["FeatureGroupName"].(string)
	if name == "" {
		fgInvalid(w, r, "1 validation error detected: Value null at 'featureGroupName' failed to satisfy constraint: Member must not be null")
		return
	}
	features, _ := in["FeatureDefinitions"].([]any)
	names := map[string]bool{}
	for _, f := range features {
		if m, ok := f.(map[string]any); ok {
			n, _ := m["FeatureName"].(string)
			names[strings.ToLower(n)] = true
		}
	}
	for _, k := range []string{"RecordIdentifierFeatureName", "EventTimeFeatureName"} {
		if n, _ := in[k].(string); !names[strings.ToLower(n)] {
			fgInvalid(w, r, "The %s %q is not among the feature definitions.", k, n)
			return
		}
	}
	online, _ := in["OnlineStoreConfig"].(map[string]any)
	offline, _ := in["OfflineStoreConfig"].(map[string]any)
	if offline == nil && (online == nil || online["EnableOnlineStore"] != true) {
		fgInvalid(w, r, "At least one of OnlineStoreConfig and OfflineStoreConfig must be enabled.")
		return
	}
	now := time.Now().UTC()
	if offline != nil {
		s3, _ := offline["S3StorageConfig"].(map[string]any)
		uri, _ := s3["S3Uri"].(string)
		if uri == "" {
			fgInvalid(w, r, "OfflineStoreConfig.S3StorageConfig.S3Uri must be set.")
			return
		}
		s3["ResolvedOutputS3Uri"] = fmt.Sprintf("%s/%s/sagemaker/%s/offline-store/%s-%d/data",
			strings.TrimSuffix(uri, "/"), ShimAccountID, r.Region, name, now.Unix())
		if offline["DisableGlueTableCreation"] != true {
			offline["DataCatalogConfig"] = map[string]any{
				"TableName": fmt.Sprintf("%s_%d", strings.ReplaceAll(strings.ToLower(name), "-", "_"), now.Unix()),
				"Catalog":   "AwsDataCatalog",
				"Database":  "sagemaker_featurestore",
			}
		}
		if offline["TableFormat"] == nil {
			offline["TableFormat"] = "Glue"
		}
	}
	throughput, _ := in["ThroughputConfig"].(map[string]any)
	if throughput == nil {
		throughput = map[string]any{"ThroughputMode": "OnDemand"}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lookup(r.Region, name) != nil {
		WriteAWSError(w, r, http.StatusBadRequest, "ResourceInUse",
			fmt.Sprintf("Resource Already Exists: FeatureGroup with name %s already exists. Choose a different name.", name))
		return
	}
	g := &shimFeatureGroup{
		name:       name,
		arn:        fmt.Sprintf("arn:aws:sagemaker:%s:%s:feature-group/%s", r.Region, ShimAccountID, strings.ToLower(name)),
		region:     r.Region,
		request:    in,
		features:   features,
		online:     online,
		offline:    offline,
		throughput: throughput,
		created:    now,
		modified:   now,
		status:     "Creating", pendingStatus: "Created",
	}
	for _, t := range shimTags(in["Tags"]) {
		g.setTag(t)
	}
	s.groups[fgKey(r.Region, name)] = g
	WriteJSON(w, map[string]any{"FeatureGroupArn": g.arn})
}

func (s *shimFeatureGroups) describe(w http.ResponseWriter, r *Request) {
	var in struct{ FeatureGroupName string }
	if err := r.DecodeJSON(&in); err != nil {
		fgInvalid(w, r, "%v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.lookup(r.Region, in.FeatureGroupName)
	if g == nil {
		fgNotFound(w, r, in.FeatureGroupName)
		return
	}
	out := g.describe()
	// Advance the double's clock: the next describe sees the next state.
	switch {
	case g.pendingStatus == "Deleted":
		delete(s.groups, fgKey(g.region, g.name))
	case g.pendingStatus != "":
		g.status, g.pendingStatus = g.pendingStatus, ""
	}
	if g.updatePending {
		g.updatePending = false
		g.lastUpdate = map[string]any{"Status": "Successful"}
	}
	WriteJSON(w, out)
}

func (g *shimFeatureGroup) describe() map[string]any {
	out := map[string]any{
		"FeatureGroupArn":             g.arn,
		"FeatureGroupName":            g.name,
		"RecordIdentifierFeatureName": g.request["RecordIdentifierFeatureName"],
		"EventTimeFeatureName":        g.request["EventTimeFeatureName"],
		"FeatureDefinitions":          g.features,
		"CreationTime":                epochSeconds(g.created),
		"LastModifiedTime":            epochSeconds(g.modified),
		"FeatureGroupStatus":          g.status,
		"ThroughputConfig":            g.throughput,
		"NextToken":                   "",
	}
	for _, k := range []string{"Description", "RoleArn"} {
		if v, ok := g.request[k]; ok {
			out[k] = v
		}
	}
	if g.online != nil {
		out["OnlineStoreConfig"] = g.online
	}
	if g.offline != nil {
		out["OfflineStoreConfig"] = g.offline
		out["OfflineStoreStatus"] = map[string]any{"Status": "Active"}
	}
	if g.lastUpdate != nil {
		out["LastUpdateStatus"] = g.lastUpdate
	}
	return out
}

func (s *shimFeatureGroups) update(w http.ResponseWriter, r *Request) {
	var in struct {
		FeatureGroupName  string
		FeatureAdditions  []map[string]any
		OnlineStoreConfig map[string]any
		ThroughputConfig  map[string]any
	}
	if err := r.DecodeJSON(&in); err != nil {
		fgInvalid(w, r, "%v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.lookup(r.Region, in.FeatureGroupName)
	if g == nil {
		fgNotFound(w, r, in.FeatureGroupName)
		return
	}
	switch {
	case g.status != "Created":
		WriteAWSError(w, r, http.StatusBadRequest, "ResourceInUse", fmt.Sprintf("FeatureGroup %s is %s and cannot be updated.", g.name, g.status))
		return
	case g.updatePending:
		WriteAWSError(w, r, http.StatusBadRequest, "ResourceInUse", fmt.Sprintf("An update of FeatureGroup %s is already in progress.", g.name))
		return
	case len(in.FeatureAdditions) > 100:
		fgInvalid(w, r, "1 validation error detected: Value at 'featureAdditions' failed to satisfy constraint: Member must have length less than or equal to 100")
		return
	}
	have := map[string]bool{}
	for _, f := range g.features {
		if m, ok := f.(map[string]any); ok {
			n, _ := m["FeatureName"].(string)
			have[strings.ToLower(n)] = true
		}
	}
	for _, f := range in.FeatureAdditions {
		n, _ := f["FeatureName"].(string)
		if have[strings.ToLower(n)] {
			fgInvalid(w, r, "Feature %s already exists in FeatureGroup %s.", n, g.name)
			return
		}
		have[strings.ToLower(n)] = true
	}
	if ttl, ok := in.OnlineStoreConfig["TtlDuration"]; ok {
		if g.online == nil || g.online["EnableOnlineStore"] != true {
			fgInvalid(w, r, "FeatureGroup %s has no online store, so its TtlDuration cannot be updated.", g.name)
			return
		}
		g.online["TtlDuration"] = ttl
	}
	for _, f := range in.FeatureAdditions {
		g.features = append(g.features, map[string]any(f))
	}
	if in.ThroughputConfig != nil {
		g.throughput = in.ThroughputConfig
	}
	g.modified = time.Now().UTC()
	g.lastUpdate = map[string]any{"Status": "InProgress"}
	g.updatePending = true
	WriteJSON(w, map[string]any{"FeatureGroupArn": g.arn})
}

func (s *shimFeatureGroups) delete(w http.ResponseWriter, r *Request) {
	var in struct{ FeatureGroupName string }
	if err := r.DecodeJSON(&in); err != nil {
		fgInvalid(w, r, "%v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.lookup(r.Region, in.FeatureGroupName)
	if g == nil {
		fgNotFound(w, r, in.FeatureGroupName)
		return
	}
	g.status, g.pendingStatus = "Deleting", "Deleted"
	WriteJSON(w, map[string]any{})
}

func (s *shimFeatureGroups) list(w http.ResponseWriter, r *Request) {
	var in struct {
		NameContains             string
		FeatureGroupStatusEquals string
		SortBy                   string
		SortOrder                string
		MaxResults               int
		NextToken                string
	}
	if err := r.DecodeJSON(&in); err != nil {
		fgInvalid(w, r, "%v", err)
		return
	}
	s.mu.Lock()
	var gs []*shimFeatureGroup
	for _, g := range s.groups {
		if g.region != r.Region ||
			in.NameContains != "" && !strings.Contains(strings.ToLower(g.name), strings.ToLower(in.NameContains)) ||
			in.FeatureGroupStatusEquals != "" && g.status != in.FeatureGroupStatusEquals {
			continue
		}
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool {
		less := gs[i].created.Before(gs[j].created) || gs[i].created.Equal(gs[j].created) && gs[i].name < gs[j].name
		switch in.SortBy {
		case "Name":
			less = gs[i].name < gs[j].name
		case "FeatureGroupStatus":
			less = gs[i].status < gs[j].status
		}
		if in.SortOrder == "Descending" {
			return !less
		}
		return less
	})
	start, _ := strconv.Atoi(in.NextToken)
	start = min(max(start, 0), len(gs))
	end := len(gs)
	if in.MaxResults > 0 {
		end = min(start+in.MaxResults, len(gs))
	}
	summaries := []map[string]any{}
	for _, g := range gs[start:end] {
		sum := map[string]any{
			"FeatureGroupName":   g.name,
			"FeatureGroupArn":    g.arn,
			"CreationTime":       epochSeconds(g.created),
			"FeatureGroupStatus": g.status,
		}
		if g.offline != nil {
			sum["OfflineStoreStatus"] = map[string]any{"Status": "Active"}
		}
		summaries = append(summaries, sum)
	}
	s.mu.Unlock()
	out := map[string]any{"FeatureGroupSummaries": summaries}
	if end < len(gs) {
		out["NextToken"] = strconv.Itoa(end)
	}
	WriteJSON(w, out)
}

// The tagging calls: feature group ARNs are served here, every other ARN
// goes to moto.

func (s *shimFeatureGroups) addTags(w http.ResponseWriter, r *Request) {
	var in struct {
		ResourceArn string
		Tags        any
	}
	if err := r.DecodeJSON(&in); err != nil || !isFeatureGroupARN(in.ResourceArn) {
		forwardToMoto(w, r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.lookup(r.Region, in.ResourceArn)
	if g == nil {
		fgNotFound(w, r, in.ResourceArn)
		return
	}
	for _, t := range shimTags(in.Tags) {
		g.setTag(t)
	}
	WriteJSON(w, map[string]any{"Tags": g.tagList()})
}

func (s *shimFeatureGroups) listTags(w http.ResponseWriter, r *Request) {
	var in struct{ ResourceArn string }
	if err := r.DecodeJSON(&in); err != nil || !isFeatureGroupARN(in.ResourceArn) {
		forwardToMoto(w, r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.lookup(r.Region, in.ResourceArn)
	if g == nil {
		fgNotFound(w, r, in.ResourceArn)
		return
	}
	WriteJSON(w, map[string]any{"Tags": g.tagList()})
}

func (s *shimFeatureGroups) deleteTags(w http.ResponseWriter, r *Request) {
	var in struct {
		ResourceArn string
		TagKeys     []string
	}
	if err := r.DecodeJSON(&in); err != nil || !isFeatureGroupARN(in.ResourceArn) {
		forwardToMoto(w, r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.lookup(r.Region, in.ResourceArn)
	if g == nil {
		fgNotFound(w, r, in.ResourceArn)
		return
	}
	drop := map[string]bool{}
	for _, k := range in.TagKeys {
		drop[k] = true
	}
	kept := g.tags[:0]
	for _, t := range g.tags {
		if !drop[t.Key] {
			kept = append(kept, t)
		}
	}
	g.tags = kept
	WriteJSON(w, map[string]any{})
}

func (g *shimFeatureGroup) setTag(t shimTag) {
	for i := range g.tags {
		if g.tags[i].Key == t.Key {
			g.tags[i].Value = t.Value
			return
		}
	}
	g.tags = append(g.tags, t)
}

func (g *shimFeatureGroup) tagList() []map[string]string {
	out := make([]map[string]string, 0, len(g.tags))
	for _, t := range g.tags {
		out = append(out, map[string]string{"Key": t.Key, "Value": t.Value})
	}
	return out
}

func shimTags(v any) []shimTag {
	list, _ := v.([]any)
	var out []shimTag
	for _, e := range list {
		m, _ := e.(map[string]any)
		k, _ := m["Key"].(string)
		val, _ := m["Value"].(string)
		if k != "" {
			out = append(out, shimTag{k, val})
		}
	}
	return out
}

func isFeatureGroupARN(arn string) bool {
	return strings.HasPrefix(arn, "arn:") && strings.Contains(arn, ":feature-group/")
}

// forwardToMoto passes a request the shim handles only in part on to moto
// and copies moto's answer back.
func forwardToMoto(w http.ResponseWriter, r *Request) {
	resp, err := r.Forward(nil)
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
}

// epochSeconds is a timestamp as the JSON protocols carry it.
func epochSeconds(t time.Time) json.Number {
	return json.Number(strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64))
}
