package residency

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// ARN is a parsed Amazon Resource Name:
// arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE. Global services (IAM, S3
// buckets, Route 53) leave Region empty.
type ARN struct {
	Partition string
	Service   string
	Region    string
	Account   string
	Resource  string
}

func (a ARN) String() string {
	return strings.Join([]string{"arn", a.Partition, a.Service, a.Region, a.Account, a.Resource}, ":")
}

var (
	regionRE    = lazyRegexp(`^[a-z]{2}(?:-[a-z]+)+-[0-9]+$`)
	partitionRE = lazyRegexp(`^aws(?:-[a-z]+)*$`)
	serviceRE   = lazyRegexp(`^[a-z0-9][a-z0-9-]*$`)
	accountRE   = lazyRegexp(`^(?:[0-9]{12}|[a-z][a-z0-9-]*)?$`)
)

// ValidRegion reports whether s has the shape of an AWS region name, e.g.
// me-central-1 or us-gov-west-1. It does not say the region exists.
func ValidRegion(s string) bool { return regionRE().MatchString(s) }

// The AWS partitions. A partition is a separate AWS: its own accounts,
// credentials, endpoints and bucket namespace.
const (
	PartitionAWS      = "aws"
	PartitionChina    = "aws-cn"
	PartitionGovCloud = "aws-us-gov"
)

// regionPartitions maps a region name prefix to the partition the region
// belongs to; any other region is in the aws partition.
var regionPartitions = []struct{ prefix, partition string }{
	{"cn-", PartitionChina},
	{"us-gov-", PartitionGovCloud},
	{"us-isob-", "aws-iso-b"},
	{"us-isof-", "aws-iso-f"},
	{"eu-isoe-", "aws-iso-e"},
	{"us-iso-", "aws-iso"},
}

// RegionPartition returns the partition a region name belongs to, e.g.
// aws-cn for cn-north-1 and aws for me-central-1.
func RegionPartition(region string) string {
	for _, p := range regionPartitions {
		if strings.HasPrefix(region, p.prefix) {
			return p.partition
		}
	}
	return PartitionAWS
}

// hostPartitions maps the DNS suffix of AWS endpoints to their partition.
// Longer suffixes come first.
var hostPartitions = []struct{ suffix, partition string }{
	{".amazonaws.com.cn", PartitionChina},
	{".amazonwebservices.com.cn", PartitionChina},
	{".api.amazonwebservices.com.cn", PartitionChina},
	{".csp.hci.ic.gov", "aws-iso-f"},
	{".sc2s.sgov.gov", "aws-iso-b"},
	{".c2s.ic.gov", "aws-iso"},
	{".cloud.adc-e.uk", "aws-iso-e"},
	{".amazonaws.com", PartitionAWS},
	{".api.aws", PartitionAWS},
	{".on.aws", PartitionAWS},
}

// HostPartition returns the partition of an AWS endpoint host and the rest
// of the host before the partition's DNS suffix. ok is false for hosts that
// are not AWS endpoints (emulators, proxies, localhost). GovCloud shares
// the aws suffix: a host naming a us-gov region is in aws-us-gov.
func HostPartition(host string) (partition, rest string, ok bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range hostPartitions {
		if r, found := strings.CutSuffix(host, h.suffix); found {
			return h.partition, r, true
		}
	}
	return "", "", false
}

// ParseARN parses an ARN. The account may be empty (S3 buckets), twelve
// digits, or a word such as "aws" (AWS-owned resources).
func ParseARN(s string) (ARN, error) {
	if !strings.HasPrefix(s, "arn:") {
		return ARN{}, fmt.Errorf("arn %q: does not start with \"arn:\"", s)
	}
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 {
		return ARN{}, fmt.Errorf("arn %q: want arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE", s)
	}
	a := ARN{Partition: parts[1], Service: parts[2], Region: parts[3], Account: parts[4], Resource: parts[5]}
	switch {
	case !partitionRE().MatchString(a.Partition):
		return ARN{}, fmt.Errorf("arn %q: bad partition %q", s, a.Partition)
	case !serviceRE().MatchString(a.Service):
		return ARN{}, fmt.Errorf("arn %q: bad service %q", s, a.Service)
	case a.Region != "" && !ValidRegion(a.Region):
		return ARN{}, fmt.Errorf("arn %q: bad region %q", s, a.Region)
	case !accountRE().MatchString(a.Account):
		return ARN{}, fmt.Errorf("arn %q: bad account %q", s, a.Account)
	case a.Resource == "":
		return ARN{}, fmt.Errorf("arn %q: empty resource", s)
	}
	return a, nil
}

// ParseKMSKeyARN parses a KMS key or alias ARN: an ARN of service kms whose
// resource is key/ID or alias/NAME. The region may be empty; callers that
// need it say so.
func ParseKMSKeyARN(s string) (ARN, error) {
	a, err := ParseARN(s)
	if err != nil {
		return ARN{}, err
	}
	if a.Service != "kms" || !(strings.HasPrefix(a.Resource, "key/") || strings.HasPrefix(a.Resource, "alias/")) {
		return ARN{}, fmt.Errorf("%q is not a KMS key or alias ARN", s)
	}
	return a, nil
}

// S3Location is a bucket and key taken from an S3 URI, bucket ARN or URL.
type S3Location struct {
	Bucket string
	Key    string // may be empty
	// Partition is the partition of the ARN or URL host; aws for s3://.
	Partition string
	// Access is set for S3 access point and multi-region access point ARNs,
	// whose bucket is not named in the reference: accesspoint/NAME.
	Access string
	// EndpointRegion is the region named in an https URL or access point
	// ARN, if any. A bucket answers only at an endpoint of its own region, so
	// it is a fact about the bucket, not a hint.
	EndpointRegion string
	// ZoneID is set for S3 Express directory buckets
	// (NAME--ZONEID--x-s3), which live in one zone.
	ZoneID string
}

// ParseS3URI accepts s3://bucket[/key], arn:PARTITION:s3:::bucket[/key],
// virtual-hosted https://bucket.s3[.-]REGION.amazonaws.com[.cn]/key and
// path-style https://s3[.-]REGION.amazonaws.com[.cn]/bucket/key, and checks the
// bucket name against the S3 naming rules.
func ParseS3URI(s string) (S3Location, error) {
	var loc S3Location
	switch {
	case strings.HasPrefix(s, "s3://"):
		rest := strings.TrimPrefix(s, "s3://")
		loc.Bucket, loc.Key, _ = strings.Cut(rest, "/")
		loc.Partition = PartitionAWS
	case strings.HasPrefix(s, "arn:"):
		a, err := ParseARN(s)
		if err != nil {
			return S3Location{}, err
		}
		loc.Partition = a.Partition
		if a.Service == "s3" && a.Account != "" {
			if name, ok := strings.CutPrefix(a.Resource, "accesspoint/"); ok {
				// An access point (regional) or a multi-region access point
				// (no region): the bucket behind it is not in the ARN.
				loc.Access, _, _ = strings.Cut(name, "/")
				loc.EndpointRegion = a.Region
				if loc.Access == "" {
					return S3Location{}, fmt.Errorf("s3 uri %q: empty access point name", s)
				}
				return loc, nil
			}
		}
		if a.Service != "s3" || a.Region != "" || a.Account != "" {
			return S3Location{}, fmt.Errorf("s3 uri %q: not a bucket ARN (want arn:aws:s3:::BUCKET)", s)
		}
		loc.Bucket, loc.Key, _ = strings.Cut(a.Resource, "/")
	case strings.HasPrefix(s, "https://"):
		var err error
		if loc, err = parseS3URL(s); err != nil {
			return S3Location{}, err
		}
	default:
		return S3Location{}, fmt.Errorf("s3 uri %q: want s3://BUCKET/KEY, a bucket ARN or an https S3 URL", s)
	}
	if err := ValidateBucketName(loc.Bucket); err != nil {
		return S3Location{}, fmt.Errorf("s3 uri %q: %w", s, err)
	}
	loc.ZoneID = directoryBucketZone(loc.Bucket)
	return loc, nil
}

func parseS3URL(s string) (S3Location, error) {
	u, err := url.Parse(s)
	if err != nil {
		return S3Location{}, fmt.Errorf("s3 uri %q: %w", s, err)
	}
	if u.User != nil || u.Port() != "" || u.RawQuery != "" || u.Fragment != "" {
		return S3Location{}, fmt.Errorf("s3 uri %q: unexpected user, port, query or fragment", s)
	}
	host := strings.ToLower(u.Hostname())
	partition, base, ok := HostPartition(host)
	if !ok || base == "" {
		return S3Location{}, fmt.Errorf("s3 uri %q: host %q is not an S3 endpoint", s, host)
	}
	labels := strings.Split(base, ".")
	// The service label is the rightmost "s3" or "s3-REGION" label; bucket
	// names may hold dots, regions and "dualstack" do not.
	idx := -1
	for i := len(labels) - 1; i >= 0; i-- {
		if labels[i] == "s3" || strings.HasPrefix(labels[i], "s3-") {
			idx = i
			break
		}
	}
	if idx < 0 {
		return S3Location{}, fmt.Errorf("s3 uri %q: host %q is not an S3 endpoint", s, host)
	}
	loc := S3Location{Partition: partition}
	if r, ok := strings.CutPrefix(labels[idx], "s3-"); ok {
		if r != "external-1" {
			loc.EndpointRegion = r
		}
	}
	tail := labels[idx+1:]
	if len(tail) > 0 && tail[0] == "dualstack" {
		tail = tail[1:]
	}
	switch len(tail) {
	case 0:
	case 1:
		if loc.EndpointRegion != "" {
			return S3Location{}, fmt.Errorf("s3 uri %q: host %q names two regions", s, host)
		}
		loc.EndpointRegion = tail[0]
	default:
		return S3Location{}, fmt.Errorf("s3 uri %q: host %q is not an S3 endpoint", s, host)
	}
	if loc.EndpointRegion != "" && !ValidRegion(loc.EndpointRegion) {
		return S3Location{}, fmt.Errorf("s3 uri %q: bad region %q in host", s, loc.EndpointRegion)
	}
	if loc.EndpointRegion != "" && partition == PartitionAWS {
		loc.Partition = RegionPartition(loc.EndpointRegion)
	}
	path := strings.TrimPrefix(u.Path, "/")
	if idx > 0 {
		loc.Bucket = strings.Join(labels[:idx], ".")
		loc.Key = path
	} else {
		loc.Bucket, loc.Key, _ = strings.Cut(path, "/")
	}
	return loc, nil
}

var bucketRE = lazyRegexp(`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`)

// ValidateBucketName applies the S3 bucket naming rules: 3 to 63 characters;
// lowercase letters, digits, dots and hyphens; a letter or digit at each end;
// no "..", no IP-address form; no reserved prefix (xn--, sthree-,
// amzn-s3-demo-) or suffix (-s3alias, --ol-s3, .mrap). Directory bucket names
// (ending --x-s3) are accepted.
func ValidateBucketName(b string) error {
	switch {
	case len(b) < 3 || len(b) > 63:
		return fmt.Errorf("bucket name %q must be 3 to 63 characters", b)
	case !bucketRE().MatchString(b):
		return fmt.Errorf("bucket name %q may hold only lowercase letters, digits, dots and hyphens, and must begin and end with a letter or digit", b)
	case strings.Contains(b, ".."):
		return fmt.Errorf("bucket name %q must not hold two adjacent dots", b)
	case net.ParseIP(b) != nil:
		return fmt.Errorf("bucket name %q must not be an IP address", b)
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(b, p) {
			return fmt.Errorf("bucket name %q must not start with the reserved prefix %q", b, p)
		}
	}
	for _, sfx := range []string{"-s3alias", "--ol-s3", ".mrap"} {
		if strings.HasSuffix(b, sfx) {
			return fmt.Errorf("bucket name %q ends with the reserved suffix %q (an access point alias or multi-region access point, not a bucket)", b, sfx)
		}
	}
	return nil
}

// directoryBucketZone returns the zone id of an S3 Express directory bucket
// name (NAME--ZONEID--x-s3), or "".
func directoryBucketZone(b string) string {
	rest, ok := strings.CutSuffix(b, "--x-s3")
	if !ok {
		return ""
	}
	i := strings.LastIndex(rest, "--")
	if i < 0 {
		return ""
	}
	return rest[i+2:]
}

// ECRImage is a parsed Amazon ECR private image reference.
type ECRImage struct {
	Account    string
	Region     string
	Host       string
	Repository string
	Tag        string // may be empty
	Digest     string // sha256:HEX, may be empty
	FIPS       bool
	Partition  string // of the registry host: aws, aws-cn, aws-us-gov
}

// ErrNotECR is wrapped by ParseECRImage when the reference is not an Amazon
// ECR private image.
var ErrNotECR = errors.New("not an Amazon ECR image")

var (
	ecrHostRE = lazyRegexp(`^([0-9]{12})\.dkr(?:\.ecr(-fips)?\.([a-z0-9-]+)\.(amazonaws\.com(?:\.cn)?)|-ecr(-fips)?\.([a-z0-9-]+)\.on\.aws)$`)
	ecrRepoRE = lazyRegexp(`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$`)
	tagRE     = lazyRegexp(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRE  = lazyRegexp(`^sha256:[a-f0-9]{64}$`)
)

// ParseECRImage parses ACCOUNT.dkr.ecr[-fips].REGION.amazonaws.com[.cn]/REPO
// (or the dual-stack ACCOUNT.dkr-ecr.REGION.on.aws) with an optional :TAG
// and/or @sha256:DIGEST. Anything else, public registries included, is an
// error wrapping ErrNotECR.
func ParseECRImage(s string) (ECRImage, error) {
	host, rest, ok := strings.Cut(s, "/")
	if !ok {
		return ECRImage{}, fmt.Errorf("image %q: %w (no registry host)", s, ErrNotECR)
	}
	m := ecrHostRE().FindStringSubmatch(host)
	if m == nil {
		return ECRImage{}, fmt.Errorf("image %q: %w (registry %q is not ACCOUNT.dkr.ecr.REGION.amazonaws.com)", s, ErrNotECR, host)
	}
	img := ECRImage{Account: m[1], Host: host, Region: m[3] + m[6], FIPS: m[2] != "" || m[5] != ""}
	if !ValidRegion(img.Region) {
		return ECRImage{}, fmt.Errorf("image %q: %w (bad region %q)", s, ErrNotECR, img.Region)
	}
	img.Partition = RegionPartition(img.Region)
	if m[4] == "amazonaws.com.cn" {
		img.Partition = PartitionChina
	}
	if repo, digest, ok := strings.Cut(rest, "@"); ok {
		if !digestRE().MatchString(digest) {
			return ECRImage{}, fmt.Errorf("image %q: %w (bad digest %q)", s, ErrNotECR, digest)
		}
		img.Digest, rest = digest, repo
	}
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		img.Tag, rest = rest[i+1:], rest[:i]
		if !tagRE().MatchString(img.Tag) {
			return ECRImage{}, fmt.Errorf("image %q: %w (bad tag %q)", s, ErrNotECR, img.Tag)
		}
	}
	if len(rest) < 2 || len(rest) > 256 || !ecrRepoRE().MatchString(rest) {
		return ECRImage{}, fmt.Errorf("image %q: %w (bad repository name %q)", s, ErrNotECR, rest)
	}
	img.Repository = rest
	return img, nil
}

// zoneIDPrefixes maps a region to the prefix of its availability zone ids
// (mec1-az1). Unknown prefixes fail closed: they match no allowed region.
var zoneIDPrefixes = map[string]string{
	"af-south-1":     "afs1",
	"ap-east-1":      "ape1",
	"ap-northeast-1": "apne1",
	"ap-northeast-2": "apne2",
	"ap-northeast-3": "apne3",
	"ap-south-1":     "aps1",
	"ap-south-2":     "aps2",
	"ap-southeast-1": "apse1",
	"ap-southeast-2": "apse2",
	"ap-southeast-3": "apse3",
	"ap-southeast-4": "apse4",
	"ca-central-1":   "cac1",
	"eu-central-1":   "euc1",
	"eu-central-2":   "euc2",
	"eu-north-1":     "eun1",
	"eu-south-1":     "eus1",
	"eu-south-2":     "eus2",
	"eu-west-1":      "euw1",
	"eu-west-2":      "euw2",
	"eu-west-3":      "euw3",
	"il-central-1":   "ilc1",
	"me-central-1":   "mec1",
	"me-south-1":     "mes1",
	"sa-east-1":      "sae1",
	"us-east-1":      "use1",
	"us-east-2":      "use2",
	"us-west-1":      "usw1",
	"us-west-2":      "usw2",
}

// ZoneIDPrefix returns the zone id prefix of a region, e.g. mec1 for
// me-central-1.
func ZoneIDPrefix(region string) (string, bool) {
	p, ok := zoneIDPrefixes[region]
	return p, ok
}

var zoneIDRE = lazyRegexp(`^([a-z]+[0-9]+)-(?:[a-z0-9]+-)*(?:az|wlz)[0-9]+$`)

// ParseZoneID returns the region of an availability zone id such as mec1-az1
// (or a Local Zone id such as use1-bos1-az1).
func ParseZoneID(id string) (region string, err error) {
	m := zoneIDRE().FindStringSubmatch(id)
	if m == nil {
		return "", fmt.Errorf("zone id %q: want PREFIX-azN, e.g. mec1-az1", id)
	}
	for r, p := range zoneIDPrefixes {
		if p == m[1] {
			return r, nil
		}
	}
	return "", fmt.Errorf("zone id %q: unknown region prefix %q", id, m[1])
}

var zoneNameRE = lazyRegexp(`^([a-z]{2}(?:-[a-z]+)+-[0-9]+)(?:[a-z]|-[a-z0-9-]*[a-z0-9])$`)

// ParseZoneName returns the region of an availability zone name: the region
// and a letter (me-central-1a), or a Local Zone (us-east-1-bos-1a).
func ParseZoneName(name string) (region string, err error) {
	m := zoneNameRE().FindStringSubmatch(name)
	if m == nil {
		return "", fmt.Errorf("zone %q: want REGION followed by a letter, e.g. me-central-1a", name)
	}
	return m[1], nil
}

// BucketLocationRegion maps S3 GetBucketLocation's LocationConstraint to a
// region name: the empty answer means us-east-1 and the legacy "EU" means
// eu-west-1; every other answer is the region itself.
func BucketLocationRegion(constraint string) string {
	switch constraint {
	case "":
		return "us-east-1"
	case "EU":
		return "eu-west-1"
	}
	return constraint
}
