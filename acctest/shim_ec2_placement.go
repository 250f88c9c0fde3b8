package acctest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// Test double: EC2 placement groups and capacity reservations.
//
// moto 5.2.1 has neither placement groups nor capacity reservations; the
// GPU cluster needs both. The shim serves CreatePlacementGroup,
// DescribePlacementGroups and DeletePlacementGroup, and
// CreateCapacityReservation, DescribeCapacityReservations and
// CancelCapacityReservation, from an in-memory store wiped on Reset.
// RunInstances still goes to moto, which ignores the placement group and
// the capacity reservation of a launch: the double checks names and ids,
// not placement.
//
// A test makes a capacity block by creating a reservation tagged
// "shim:reservation-type" = "capacity-block" (EC2 sells capacity blocks
// through PurchaseCapacityBlock, which the double does not serve).

// RegisterEC2GPUCluster registers every EC2 double the GPU cluster needs
// (placement groups and capacity reservations) and returns a function that
// removes them.
func RegisterEC2GPUCluster(s *Shim) (remove func()) {
	a, b := RegisterEC2PlacementGroups(s), RegisterEC2CapacityReservations(s)
	return func() { a(); b() }
}

// RegisterEC2PlacementGroups makes the shim serve CreatePlacementGroup,
// DescribePlacementGroups and DeletePlacementGroup.
func RegisterEC2PlacementGroups(s *Shim) (remove func()) {
	pg := &shimPlacementGroups{groups: map[string]*shimPlacementGroup{}}
	s.OnReset(pg.reset)
	return registerAll(s, "ec2", map[string]HandlerFunc{
		"CreatePlacementGroup":    pg.create,
		"DescribePlacementGroups": pg.describe,
		"DeletePlacementGroup":    pg.delete,
	})
}

func registerAll(s *Shim, service string, hs map[string]HandlerFunc) func() {
	var removes []func()
	for action, h := range hs {
		removes = append(removes, s.Handle(service, action, h))
	}
	return func() {
		for _, r := range removes {
			r()
		}
	}
}

type shimPlacementGroups struct {
	mu     sync.Mutex
	groups map[string]*shimPlacementGroup // region/name
}

type shimPlacementGroup struct {
	GroupName      string       `xml:"groupName"`
	GroupID        string       `xml:"groupId"`
	GroupArn       string       `xml:"groupArn"`
	Strategy       string       `xml:"strategy"`
	PartitionCount int          `xml:"partitionCount,omitempty"`
	State          string       `xml:"state"`
	Tags           []shimEC2Tag `xml:"tagSet>item"`
	region         string
}

type shimEC2Tag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func (p *shimPlacementGroups) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groups = map[string]*shimPlacementGroup{}
}

func (p *shimPlacementGroups) create(w http.ResponseWriter, r *Request) {
	name := r.Form.Get("GroupName")
	strategy := r.Form.Get("Strategy")
	if name == "" {
		WriteAWSError(w, r, 0, "MissingParameter", "The request must contain the parameter GroupName")
		return
	}
	switch strategy {
	case "cluster", "spread", "partition":
	default:
		WriteAWSError(w, r, 0, "InvalidParameterValue", fmt.Sprintf("Value (%s) for parameter strategy is invalid.", strategy))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := r.Region + "/" + name
	if _, ok := p.groups[key]; ok {
		WriteAWSError(w, r, 0, "InvalidPlacementGroup.Duplicate", fmt.Sprintf("The Placement Group '%s' already exists.", name))
		return
	}
	id := "pg-" + shimHexID(17)
	g := &shimPlacementGroup{
		GroupName: name, GroupID: id, Strategy: strategy, State: "available", region: r.Region,
		GroupArn: fmt.Sprintf("arn:aws:ec2:%s:%s:placement-group/%s", r.Region, ShimAccountID, name),
		Tags:     shimTagSpecs(r.Form, "placement-group"),
	}
	if n, err := strconv.Atoi(r.Form.Get("PartitionCount")); err == nil {
		g.PartitionCount = n
	}
	p.groups[key] = g
	WriteEC2XML(w, r.Action, struct {
		Return bool                `xml:"return"`
		Group  *shimPlacementGroup `xml:"placementGroup"`
	}{true, g})
}

func (p *shimPlacementGroups) describe(w http.ResponseWriter, r *Request) {
	names, ids := shimIndexed(r.Form, "GroupName"), shimIndexed(r.Form, "GroupId")
	filters := shimFilters(r.Form)
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*shimPlacementGroup
	for _, g := range p.groups {
		if g.region != r.Region {
			continue
		}
		if len(names) > 0 && !contains(names, g.GroupName) || len(ids) > 0 && !contains(ids, g.GroupID) {
			continue
		}
		if !shimMatch(filters, map[string]string{"group-name": g.GroupName, "group-id": g.GroupID, "strategy": g.Strategy, "state": g.State}, g.Tags) {
			continue
		}
		out = append(out, g)
	}
	for _, n := range names {
		if _, ok := p.groups[r.Region+"/"+n]; !ok {
			WriteAWSError(w, r, 0, "InvalidPlacementGroup.Unknown", fmt.Sprintf("The Placement Group '%s' is unknown.", n))
			return
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupName < out[j].GroupName })
	WriteEC2XML(w, r.Action, struct {
		Groups []*shimPlacementGroup `xml:"placementGroupSet>item"`
	}{out})
}

func (p *shimPlacementGroups) delete(w http.ResponseWriter, r *Request) {
	name := r.Form.Get("GroupName")
	p.mu.Lock()
	defer p.mu.Unlock()
	key := r.Region + "/" + name
	if _, ok := p.groups[key]; !ok {
		WriteAWSError(w, r, 0, "InvalidPlacementGroup.Unknown", fmt.Sprintf("The Placement Group '%s' is unknown.", name))
		return
	}
	delete(p.groups, key)
	WriteEC2XML(w, r.Action, "<return>true</return>")
}

// RegisterEC2CapacityReservations makes the shim serve
// CreateCapacityReservation, DescribeCapacityReservations and
// CancelCapacityReservation.
func RegisterEC2CapacityReservations(s *Shim) (remove func()) {
	cr := &shimCapacityReservations{res: map[string]*shimCapacityReservation{}}
	s.OnReset(cr.reset)
	return registerAll(s, "ec2", map[string]HandlerFunc{
		"CreateCapacityReservation":    cr.create,
		"DescribeCapacityReservations": cr.describe,
		"CancelCapacityReservation":    cr.cancel,
	})
}

type shimCapacityReservations struct {
	mu  sync.Mutex
	res map[string]*shimCapacityReservation // id
}

type shimCapacityReservation struct {
	ID                     string       `xml:"capacityReservationId"`
	OwnerID                string       `xml:"ownerId"`
	Arn                    string       `xml:"capacityReservationArn"`
	ZoneID                 string       `xml:"availabilityZoneId"`
	InstanceType           string       `xml:"instanceType"`
	InstancePlatform       string       `xml:"instancePlatform"`
	Zone                   string       `xml:"availabilityZone"`
	Tenancy                string       `xml:"tenancy"`
	TotalInstanceCount     int          `xml:"totalInstanceCount"`
	AvailableInstanceCount int          `xml:"availableInstanceCount"`
	EbsOptimized           bool         `xml:"ebsOptimized"`
	State                  string       `xml:"state"`
	StartDate              string       `xml:"startDate"`
	EndDate                string       `xml:"endDate,omitempty"`
	EndDateType            string       `xml:"endDateType"`
	InstanceMatchCriteria  string       `xml:"instanceMatchCriteria"`
	CreateDate             string       `xml:"createDate"`
	Tags                   []shimEC2Tag `xml:"tagSet>item"`
	ReservationType        string       `xml:"reservationType"`
	region                 string
}

func (c *shimCapacityReservations) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res = map[string]*shimCapacityReservation{}
}

func (c *shimCapacityReservations) create(w http.ResponseWriter, r *Request) {
	f := r.Form
	count, err := strconv.Atoi(f.Get("InstanceCount"))
	if err != nil || count < 1 {
		WriteAWSError(w, r, 0, "InvalidParameterValue", "InstanceCount must be a positive integer")
		return
	}
	zone, zoneID := f.Get("AvailabilityZone"), f.Get("AvailabilityZoneId")
	switch {
	case zone != "" && zoneID == "":
		zoneID = shimZoneID(r.Region, zone)
	case zoneID != "" && zone == "":
		zone = shimZoneName(r.Region, zoneID)
	case zone == "" && zoneID == "":
		WriteAWSError(w, r, 0, "MissingParameter", "Either AvailabilityZone or AvailabilityZoneId is required")
		return
	}
	if zoneID == "" || zone == "" {
		WriteAWSError(w, r, 0, "InvalidParameterValue", fmt.Sprintf("unknown availability zone %s%s in %s", zone, zoneID, r.Region))
		return
	}
	now := time.Now().UTC()
	id := "cr-" + shimHexID(17)
	res := &shimCapacityReservation{
		ID: id, OwnerID: ShimAccountID, Arn: fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", r.Region, ShimAccountID, id),
		ZoneID: zoneID, Zone: zone, InstanceType: f.Get("InstanceType"), InstancePlatform: shimDefault(f.Get("InstancePlatform"), "Linux/UNIX"),
		Tenancy: shimDefault(f.Get("Tenancy"), "default"), TotalInstanceCount: count, AvailableInstanceCount: count,
		State: "active", StartDate: now.Format(time.RFC3339), EndDateType: shimDefault(f.Get("EndDateType"), "unlimited"),
		InstanceMatchCriteria: shimDefault(f.Get("InstanceMatchCriteria"), "open"), CreateDate: now.Format(time.RFC3339),
		Tags: shimTagSpecs(f, "capacity-reservation"), ReservationType: "default", region: r.Region,
	}
	if e := f.Get("EndDate"); e != "" {
		res.EndDate = e
	}
	for _, t := range res.Tags {
		if t.Key == "shim:reservation-type" {
			res.ReservationType = t.Value
		}
	}
	c.mu.Lock()
	c.res[id] = res
	c.mu.Unlock()
	WriteEC2XML(w, r.Action, struct {
		Res *shimCapacityReservation `xml:"capacityReservation"`
	}{res})
}

func (c *shimCapacityReservations) describe(w http.ResponseWriter, r *Request) {
	ids := shimIndexed(r.Form, "CapacityReservationId")
	filters := shimFilters(r.Form)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if res, ok := c.res[id]; !ok || res.region != r.Region {
			WriteAWSError(w, r, 0, "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id))
			return
		}
	}
	var out []*shimCapacityReservation
	for _, res := range c.res {
		if res.region != r.Region || len(ids) > 0 && !contains(ids, res.ID) {
			continue
		}
		if !shimMatch(filters, map[string]string{"instance-type": res.InstanceType, "availability-zone": res.Zone, "state": res.State, "reservation-type": res.ReservationType}, res.Tags) {
			continue
		}
		out = append(out, res)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	WriteEC2XML(w, r.Action, struct {
		Res []*shimCapacityReservation `xml:"capacityReservationSet>item"`
	}{out})
}

func (c *shimCapacityReservations) cancel(w http.ResponseWriter, r *Request) {
	id := r.Form.Get("CapacityReservationId")
	c.mu.Lock()
	defer c.mu.Unlock()
	res, ok := c.res[id]
	if !ok {
		WriteAWSError(w, r, 0, "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id))
		return
	}
	res.State = "cancelled"
	WriteEC2XML(w, r.Action, "<return>true</return>")
}

// shimIndexed reads an EC2 query list: Name.1, Name.2, ...
func shimIndexed(f url.Values, name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := f[name+"."+strconv.Itoa(i)]
		if !ok || len(v) == 0 {
			return out
		}
		out = append(out, v[0])
	}
}

// shimFilters reads Filter.N.Name and Filter.N.Value.M.
func shimFilters(f url.Values) map[string][]string {
	out := map[string][]string{}
	for i := 1; ; i++ {
		name := f.Get("Filter." + strconv.Itoa(i) + ".Name")
		if name == "" {
			return out
		}
		out[name] = shimIndexed(f, "Filter."+strconv.Itoa(i)+".Value")
	}
}

// shimMatch applies EC2 filters to attributes and tags ("tag:KEY", "tag-key").
func shimMatch(filters map[string][]string, attrs map[string]string, tags []shimEC2Tag) bool {
	for name, values := range filters {
		var have []string
		switch {
		case strings.HasPrefix(name, "tag:"):
			for _, t := range tags {
				if t.Key == strings.TrimPrefix(name, "tag:") {
					have = append(have, t.Value)
				}
			}
		case name == "tag-key":
			for _, t := range tags {
				have = append(have, t.Key)
			}
		default:
			v, ok := attrs[name]
			if !ok {
				continue // filters the double does not know pass
			}
			have = []string{v}
		}
		ok := false
		for _, h := range have {
			if contains(values, h) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// shimTagSpecs reads the tags of TagSpecification.N for resourceType.
func shimTagSpecs(f url.Values, resourceType string) []shimEC2Tag {
	var out []shimEC2Tag
	for i := 1; ; i++ {
		p := "TagSpecification." + strconv.Itoa(i)
		rt := f.Get(p + ".ResourceType")
		if rt == "" {
			return out
		}
		if rt != resourceType {
			continue
		}
		for j := 1; ; j++ {
			k, ok := f[p+".Tag."+strconv.Itoa(j)+".Key"]
			if !ok {
				break
			}
			out = append(out, shimEC2Tag{Key: k[0], Value: f.Get(p + ".Tag." + strconv.Itoa(j) + ".Value")})
		}
	}
}

// shimZoneID maps a zone name to moto's zone id: the zone letter a, b, c
// becomes az1, az2, az3.
func shimZoneID(region, zone string) string {
	prefix, ok := residency.ZoneIDPrefix(region)
	letter, found := strings.CutPrefix(zone, region)
	if !ok || !found || len(letter) != 1 || letter[0] < 'a' || letter[0] > 'z' {
		return ""
	}
	return fmt.Sprintf("%s-az%d", prefix, letter[0]-'a'+1)
}

// shimZoneName is the inverse of shimZoneID.
func shimZoneName(region, zoneID string) string {
	prefix, ok := residency.ZoneIDPrefix(region)
	n, err := strconv.Atoi(strings.TrimPrefix(zoneID, prefix+"-az"))
	if !ok || err != nil || n < 1 || n > 26 {
		return ""
	}
	return region + string(rune('a'+n-1))
}

func shimDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func shimHexID(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
