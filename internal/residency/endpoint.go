package residency

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Endpoint is what an endpoint URL says about where calls go.
type Endpoint struct {
	Scheme string // http or https
	Host   string
	// Loopback is true for a host on this machine: 127.0.0.0/8, ::1 or
	// localhost.
	Loopback bool
	// AWS is false for hosts that are not AWS endpoints: emulators,
	// forwarding proxies, localhost, IP addresses. Where they send calls
	// cannot be told from the URL.
	AWS       bool
	Partition string // for AWS hosts
	// Region is the region an AWS host names; "" for a global endpoint
	// (ec2.amazonaws.com, s3.amazonaws.com), which AWS serves from
	// us-east-1 in the aws partition.
	Region string

	// suffix is an AWS host's partition DNS suffix (.amazonaws.com) and
	// rest the host before it.
	suffix, rest string
}

// endpointSkipLabels are labels that may stand between the region and the
// partition's DNS suffix.
var endpointSkipLabels = []string{"vpce", "dualstack"}

// ParseEndpoint parses an endpoint URL (https://ec2.me-central-1.amazonaws.com,
// https://vpce-0abc.ec2.me-central-1.vpce.amazonaws.com, http://127.0.0.1:5000).
func ParseEndpoint(raw string) (Endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return Endpoint{}, fmt.Errorf("endpoint %q: want http(s)://HOST[:PORT]", raw)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	ep := Endpoint{Scheme: u.Scheme, Host: host}
	if ip := net.ParseIP(host); ip != nil {
		ep.Loopback = ip.IsLoopback()
		return ep, nil
	}
	if host == "localhost" {
		ep.Loopback = true
		return ep, nil
	}
	partition, rest, ok := HostPartition(host)
	if !ok {
		return ep, nil
	}
	ep.AWS, ep.Partition, ep.rest = true, partition, rest
	ep.suffix = strings.TrimPrefix(host, rest)
	labels := strings.Split(rest, ".")
	for i := len(labels) - 1; i >= 0; i-- {
		l := labels[i]
		if l == "" || slices.Contains(endpointSkipLabels, l) {
			continue
		}
		if r, ok := strings.CutPrefix(l, "s3-"); ok && ValidRegion(r) {
			l = r // legacy s3-REGION host
		}
		if ValidRegion(l) {
			ep.Region = l
		}
		break
	}
	if ep.Region != "" && partition == PartitionAWS {
		ep.Partition = RegionPartition(ep.Region)
	}
	return ep, nil
}

// ServiceHost reports whether the host is an endpoint AWS serves for the
// service whose hosts start with prefix (ec2, api.sagemaker): PREFIX.REGION
// under amazonaws.com, amazonaws.com.cn or api.aws, with its FIPS
// (PREFIX-fips) and dual-stack (PREFIX.dualstack.REGION) forms, the legacy
// s3-REGION form, a global PREFIX.amazonaws.com, or an interface VPC
// endpoint vpce-ID.PREFIX.REGION.vpce.amazonaws.com. Other hosts under AWS
// DNS suffixes (an EC2 instance's public name, a load balancer, a Lambda
// function URL, API Gateway) are anyone's: false.
func (e Endpoint) ServiceHost(prefix string) bool {
	if !e.AWS || prefix == "" {
		return false
	}
	labels := strings.Split(strings.TrimPrefix(e.rest, "."), ".")
	if e.suffix == ".amazonaws.com" && len(labels) > 2 && labels[len(labels)-1] == "vpce" && strings.HasPrefix(labels[0], "vpce-") {
		// vpce-ID[-AZ].PREFIX.REGION.vpce
		labels = labels[1 : len(labels)-1]
		return strings.Join(labels[:len(labels)-1], ".") == prefix && ValidRegion(labels[len(labels)-1])
	}
	if len(labels) == 1 && prefix == "s3" && strings.HasPrefix(labels[0], "s3-") && ValidRegion(strings.TrimPrefix(labels[0], "s3-")) {
		return true // legacy s3-REGION.amazonaws.com
	}
	if e.suffix != ".api.aws" && strings.Join(labels, ".") == prefix {
		return true // global endpoint (its region is CheckEndpoint's concern)
	}
	if len(labels) < 2 || !ValidRegion(labels[len(labels)-1]) {
		return false
	}
	head := labels[:len(labels)-1]
	if e.suffix != ".api.aws" && len(head) > 1 && head[len(head)-1] == "dualstack" {
		head = head[:len(head)-1]
	}
	name := strings.Join(head, ".")
	return name == prefix || name == prefix+"-fips"
}

// CheckEndpoint checks an endpoint override (path names it for the error,
// e.g. endpoints.ec2). An AWS host must be in the jurisdiction's partition
// and name an allowed region (a global endpoint counts as us-east-1). Other
// hosts (emulators, proxies, private DNS names of VPC endpoints) are allowed:
// the URL does not say where they send calls, and the provider signs every
// request for its own region either way.
func (p *Policy) CheckEndpoint(path, raw string) error {
	if strings.TrimSpace(raw) == "" {
		return nil
	}
	ep, err := ParseEndpoint(raw)
	if err != nil {
		return &ConfigError{Path: path, Msg: err.Error()}
	}
	if !ep.AWS {
		return nil
	}
	allowed := strings.Join(p.AllowedRegions, ", ")
	if ep.Partition != p.Partition() {
		return &ConfigError{Path: path, Msg: fmt.Sprintf("endpoint %q is in AWS partition %s; jurisdiction %s lies in partition %s (allowed regions: %s). Use an endpoint of an allowed region, or remove the override", raw, ep.Partition, p.Jurisdiction.Code, p.Partition(), allowed)}
	}
	region, what := ep.Region, "names region"
	if region == "" {
		region, what = "us-east-1", "is a global endpoint, served from"
	}
	if !p.RegionAllowed(region) {
		return &ConfigError{Path: path, Msg: fmt.Sprintf("endpoint %q %s %s, outside jurisdiction %s (allowed regions: %s): calls would be served there. Use the endpoint of %s, e.g. https://SERVICE.%s.amazonaws.com, or remove the override", raw, what, region, p.Jurisdiction.Code, allowed, allowed, p.AllowedRegions[0])}
	}
	return nil
}
