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
	Host string
	// AWS is false for hosts that are not AWS endpoints: emulators,
	// forwarding proxies, localhost, IP addresses. Where they send calls
	// cannot be told from the URL.
	AWS       bool
	Partition string // for AWS hosts
	// Region is the region an AWS host names; "" for a global endpoint
	// (ec2.amazonaws.com, s3.amazonaws.com), which AWS serves from
	// us-east-1 in the aws partition.
	Region string
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
	ep := Endpoint{Host: host}
	if net.ParseIP(host) != nil {
		return ep, nil
	}
	partition, rest, ok := HostPartition(host)
	if !ok {
		return ep, nil
	}
	ep.AWS, ep.Partition = true, partition
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
