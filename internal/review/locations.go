package review

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// errOffline is what the plan locator answers when the plan alone cannot
// tell: the verdict is then "unknown", never a pass.
var errOffline = errors.New("not decidable from the plan")

// planLocator answers residency.Locator's questions from the plan itself:
// buckets and keys the plan creates or holds, and replication
// configurations it declares. It makes no call.
type planLocator struct {
	buckets     map[string]string   // bucket name -> region ("" = unknown)
	replication map[string][]string // bucket name -> destination bucket names or ARNs
	replUnknown map[string]bool     // a replication configuration whose destination only apply knows
	keys        map[string]residency.KeyInfo
	zoneIDs     map[string]string // zone name -> zone id, where a resource in the plan names both
}

var _ residency.Locator = (*planLocator)(nil)

func (l *planLocator) BucketRegion(_ context.Context, bucket string) (string, error) {
	r, ok := l.buckets[bucket]
	if !ok {
		return "", fmt.Errorf("bucket %q is not in this plan: %w", bucket, errOffline)
	}
	if r == "" || r == unknownValue {
		return "", fmt.Errorf("the region of bucket %q is known only after apply: %w", bucket, errOffline)
	}
	return r, nil
}

func (l *planLocator) BucketReplicationRegions(_ context.Context, bucket string) ([]string, error) {
	if l.replUnknown[bucket] {
		return nil, fmt.Errorf("the replication destination of bucket %q is known only after apply: %w", bucket, errOffline)
	}
	var out []string
	for _, dest := range l.replication[bucket] {
		name := dest
		if loc, err := residency.ParseS3URI(dest); err == nil {
			name = loc.Bucket
		}
		r, ok := l.buckets[name]
		if !ok || r == "" || r == unknownValue {
			return nil, fmt.Errorf("bucket %q replicates to %q, whose region the plan does not tell: %w", bucket, dest, errOffline)
		}
		out = append(out, r)
	}
	return out, nil
}

func (l *planLocator) ZoneID(_ context.Context, region, zone string) (string, error) {
	if id, ok := l.zoneIDs[zone]; ok {
		return id, nil
	}
	return "", fmt.Errorf("zone %s: zone names map to zone ids per account, which only AWS knows: %w", zone, errOffline)
}

func (l *planLocator) DescribeKey(_ context.Context, arn string) (residency.KeyInfo, error) {
	if k, ok := l.keys[arn]; ok {
		return k, nil
	}
	return residency.KeyInfo{}, fmt.Errorf("key %s is not in this plan: %w", arn, errOffline)
}

// newPlanLocator gathers the buckets, keys and replication rules in the plan.
func newPlanLocator(changes []Change) *planLocator {
	l := &planLocator{buckets: map[string]string{}, replication: map[string][]string{}, replUnknown: map[string]bool{}, keys: map[string]residency.KeyInfo{}, zoneIDs: map[string]string{}}
	for i := range changes {
		c := &changes[i]
		m := c.After
		if m == nil {
			continue
		}
		v := values{m: m, unknown: c.afterUnknown}
		// A resource that names both its zone and zone id (as a GPU cluster
		// or an instance does) tells how the account maps that zone name.
		for _, pair := range [][2]string{{"zone", "zone_id"}, {"availability_zone", "availability_zone_id"}} {
			name, k1 := v.str(pair[0])
			id, k2 := v.str(pair[1])
			if k1 && k2 && name != "" && id != "" && name != unknownValue && id != unknownValue {
				l.zoneIDs[name] = id
			}
		}
		switch c.Type {
		case "aws_s3_bucket":
			name, known := v.str("bucket")
			if !known || name == "" {
				continue
			}
			l.buckets[name] = resourceRegion(c, v)
		case "aws_s3_bucket_replication_configuration":
			src, known := v.str("bucket")
			if !known || src == "" {
				continue
			}
			rules, known := v.get("rule")
			if !known {
				l.replUnknown[src] = true
				continue
			}
			list, _ := rules.([]any)
			for ri, r := range list {
				d, known := values{m: map[string]any{"r": r}, unknown: map[string]any{"r": listAt(lookup(c.afterUnknown, "rule"), ri)}}.str("r", "destination", "bucket")
				if !known {
					l.replUnknown[src] = true
					continue
				}
				if d != "" {
					l.replication[src] = append(l.replication[src], d)
				}
			}
		case "aws_kms_key", "aws_kms_replica_key":
			arn, known := v.str("arn")
			if !known || arn == "" {
				continue
			}
			region := resourceRegion(c, v)
			mr, _ := v.get("multi_region")
			l.keys[arn] = residency.KeyInfo{ARN: arn, Region: region, CustomerManaged: true, MultiRegion: mr == true}
		}
	}
	return l
}

func listAt(v any, i int) any {
	if l, ok := v.([]any); ok && i < len(l) {
		return l[i]
	}
	if b, ok := v.(bool); ok {
		return b
	}
	return nil
}

// resourceRegion is where a resource lives: its own region attribute (AWS
// provider 6 and bucket_region), else its provider configuration's region.
func resourceRegion(c *Change, v values) string {
	// A region attribute known only after apply is the provider's region
	// (AWS provider 5 computes it so; 6 defaults it so).
	for _, a := range []string{"region", "bucket_region"} {
		if r, known := v.str(a); known && r != "" {
			return r
		}
	}
	return c.Region
}

var ecrRE = regexp.MustCompile(`^[0-9]{12}\.dkr\.ecr(-fips)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/`)

// refsOf lists the locations one resource refers to: its region, zones,
// keys, buckets, images and ARNs, found by attribute name and by the shape
// of the value anywhere in the planned values.
func refsOf(c *Change) (refs []residency.Ref, unknown []residency.Ref) {
	v := values{m: c.After, unknown: c.afterUnknown}
	seen := map[string]bool{}
	add := func(r residency.Ref) {
		key := r.Path + "=" + r.Value
		if seen[key] {
			return
		}
		seen[key] = true
		refs = append(refs, r)
	}
	// Where the resource itself lives.
	if strings.HasPrefix(c.Type, "aws_") || strings.HasPrefix(c.Type, "mlplatform_") {
		switch r := resourceRegion(c, v); r {
		case "":
		case unknownValue:
			unknown = append(unknown, residency.Ref{Path: "region", Kind: residency.KindRegion, Value: unknownValue})
		default:
			path := "region"
			if _, ok := c.After["region"]; !ok {
				path = "(" + c.RegionSource + ")"
				if c.RegionSource == "" {
					path = "(provider region)"
				}
			}
			add(residency.Ref{Path: path, Kind: residency.KindRegion, Value: r})
		}
	}
	var walk func(path string, x any, u any)
	walk = func(path string, x any, u any) {
		if b, ok := u.(bool); ok && b {
			if kind, ok := kindByName(lastName(path)); ok {
				unknown = append(unknown, residency.Ref{Path: path, Kind: kind, Value: unknownValue})
			}
			return
		}
		switch t := x.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			// Terraform leaves attributes known only after apply out of
			// after; after_unknown names them.
			if um, ok := u.(map[string]any); ok {
				for k := range um {
					if _, ok := t[k]; !ok {
						keys = append(keys, k)
					}
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k == "tags" || k == "tags_all" || k == "report" || (path == "" && (k == "id" || k == "region")) {
					continue
				}
				p := k
				if path != "" {
					p = path + "." + k
				}
				var uu any
				if um, ok := u.(map[string]any); ok {
					uu = um[k]
				}
				walk(p, t[k], uu)
			}
		case []any:
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", path, i), e, listAt(u, i))
			}
		case string:
			if t == "" {
				return
			}
			if t == unknownValue {
				if kind, ok := kindByName(lastName(path)); ok {
					unknown = append(unknown, residency.Ref{Path: path, Kind: kind, Value: unknownValue})
				}
				return
			}
			if kind, ok := kindOf(lastName(path), t); ok {
				add(residency.Ref{Path: path, Kind: kind, Value: t})
			}
		}
	}
	walk("", c.After, c.afterUnknown)
	return refs, unknown
}

func lastName(path string) string {
	p := path
	for strings.HasSuffix(p, "]") {
		if i := strings.LastIndex(p, "["); i >= 0 {
			p = p[:i]
		} else {
			break
		}
	}
	if i := strings.LastIndex(p, "."); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// kindByName is the reference kind an attribute's name implies, for values
// not known until apply.
func kindByName(name string) (residency.Kind, bool) {
	switch {
	case name == "availability_zone" || name == "zone":
		return residency.KindZone, true
	case name == "availability_zone_id" || name == "zone_id" || name == "zone_ids":
		return residency.KindZoneID, true
	case strings.Contains(name, "kms_key"):
		return residency.KindKMSKey, true
	case strings.HasSuffix(name, "s3_uri") || strings.HasSuffix(name, "s3_uris") || name == "model_data_url" || name == "destination_s3_uri" || name == "s3_output_path":
		return residency.KindS3URI, true
	case name == "image" || name == "image_uri" || name == "ecr_image_uris":
		return residency.KindECRImage, true
	case name == "region" || name == "regions":
		return residency.KindRegion, true
	case name == "ami" || name == "image_id":
		return residency.KindImage, true
	}
	return "", false
}

// kindOf is the kind of a known value: by its shape first, then by the
// attribute's name.
func kindOf(name, v string) (residency.Kind, bool) {
	switch {
	case strings.HasPrefix(v, "arn:"):
		if strings.Contains(name, "kms_key") || strings.HasPrefix(v, "arn:aws:kms:") {
			return residency.KindKMSKey, true
		}
		if name == "image" {
			return residency.KindImage, true
		}
		if strings.Contains(name, "role") {
			return residency.KindARN, true // IAM: global, passes by rule
		}
		return residency.KindARN, true
	case strings.HasPrefix(v, "s3://") || strings.HasPrefix(v, "https://") && strings.Contains(v, ".s3.") && strings.Contains(v, "amazonaws.com"):
		return residency.KindS3URI, true
	case ecrRE.MatchString(v):
		return residency.KindECRImage, true
	}
	switch kind, ok := kindByName(name); {
	case !ok:
		return "", false
	case kind == residency.KindKMSKey:
		return kind, true // a key id or alias: resolved, else unknown
	case kind == residency.KindZone:
		if _, err := residency.ParseZoneName(v); err == nil {
			return kind, true
		}
		if _, err := residency.ParseZoneID(v); err == nil {
			return residency.KindZoneID, true
		}
	case kind == residency.KindZoneID:
		return kind, true
	case kind == residency.KindRegion:
		return kind, residency.ValidRegion(v)
	case kind == residency.KindECRImage:
		if strings.HasPrefix(v, "ami-") || strings.HasPrefix(v, "/aws/service/") || strings.HasPrefix(v, "resolve:ssm:") {
			return residency.KindImage, true
		}
		return kind, true
	case kind == residency.KindS3URI, kind == residency.KindImage:
		return kind, true
	}
	return "", false
}
