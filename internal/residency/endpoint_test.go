package residency

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckEndpoint(t *testing.T) {
	p, err := NewPolicy(PolicyConfig{Jurisdiction: "AE"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url     string
		wantErr string // "" = allowed
	}{
		{url: "https://ec2.me-central-1.amazonaws.com"},
		{url: "https://ec2.me-central-1.api.aws"},
		{url: "https://ec2-fips.me-central-1.amazonaws.com"},
		{url: "https://vpce-0123456789abcdef0-abcdefgh.ec2.me-central-1.vpce.amazonaws.com"},
		{url: "https://s3.dualstack.me-central-1.amazonaws.com"},
		{url: "http://127.0.0.1:5000"},
		{url: "http://localhost:4566"},
		{url: "https://ec2.internal.example.com"},
		{url: "https://proxy.corp:8443/aws"},
		{url: ""},
		{url: "https://ec2.eu-west-1.amazonaws.com", wantErr: "names region eu-west-1"},
		{url: "https://EC2.EU-WEST-1.AMAZONAWS.COM.", wantErr: "names region eu-west-1"},
		{url: "https://s3-eu-west-1.amazonaws.com", wantErr: "names region eu-west-1"},
		{url: "https://vpce-0123-abcd.ec2.eu-west-1.vpce.amazonaws.com", wantErr: "names region eu-west-1"},
		{url: "https://ec2.eu-west-1.api.aws", wantErr: "names region eu-west-1"},
		{url: "https://ec2.amazonaws.com", wantErr: "global endpoint, served from us-east-1"},
		{url: "https://sts.amazonaws.com", wantErr: "global endpoint"},
		{url: "https://ec2.cn-north-1.amazonaws.com.cn", wantErr: "partition aws-cn"},
		{url: "https://ec2.me-central-1.amazonaws.com.cn", wantErr: "partition aws-cn"},
		{url: "https://ec2.us-gov-west-1.amazonaws.com", wantErr: "partition aws-us-gov"},
		{url: "ftp://ec2.me-central-1.amazonaws.com", wantErr: "want http(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := p.CheckEndpoint("endpoints.ec2", tt.url)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckEndpoint(%q) = %v, want allowed", tt.url, err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Path != "endpoints.ec2" || !strings.Contains(ce.Msg, tt.wantErr) {
				t.Fatalf("CheckEndpoint(%q) = %v, want a ConfigError at endpoints.ec2 containing %q", tt.url, err, tt.wantErr)
			}
		})
	}
}

func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"https://ec2.me-central-1.amazonaws.com", "http://127.0.0.1:5000", "https://s3-eu-west-1.amazonaws.com", "https://x.vpce.amazonaws.com.cn"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := ParseEndpoint(s)
		if err != nil {
			return
		}
		if !ep.AWS && (ep.Region != "" || ep.Partition != "") {
			t.Fatalf("ParseEndpoint(%q) = %+v: a non-AWS host with a region or partition", s, ep)
		}
		if ep.Region != "" && !ValidRegion(ep.Region) {
			t.Fatalf("ParseEndpoint(%q) region %q is not region-shaped", s, ep.Region)
		}
	})
}

// Only hosts AWS serves for the service count as its endpoint; names under
// AWS DNS suffixes that anyone can own do not.
func TestEndpointServiceHost(t *testing.T) {
	for _, tt := range []struct {
		url, prefix string
		want        bool
	}{
		{"https://ec2.me-central-1.amazonaws.com", "ec2", true},
		{"https://ec2-fips.me-central-1.amazonaws.com", "ec2", true},
		{"https://ec2.me-central-1.api.aws", "ec2", true},
		{"https://s3.dualstack.me-central-1.amazonaws.com", "s3", true},
		{"https://s3-fips.dualstack.me-central-1.amazonaws.com", "s3", true},
		{"https://s3-me-central-1.amazonaws.com", "s3", true},
		{"https://sts.amazonaws.com", "sts", true},
		{"https://api.sagemaker.me-central-1.amazonaws.com", "api.sagemaker", true},
		{"https://vpce-0123-abcd.api.sagemaker.me-central-1.vpce.amazonaws.com", "api.sagemaker", true},
		{"https://vpce-0123456789abcdef0-abcdefgh-me-central-1a.ec2.me-central-1.vpce.amazonaws.com", "ec2", true},
		{"https://EC2.ME-CENTRAL-1.AMAZONAWS.COM.", "ec2", true},
		{"https://ec2.cn-north-1.amazonaws.com.cn", "ec2", true},
		{"https://kms.me-central-1.amazonaws.com", "ec2", false},
		{"https://ec2-3-28-1-1.me-central-1.compute.amazonaws.com", "ec2", false},
		{"https://collector-123.me-central-1.elb.amazonaws.com", "ec2", false},
		{"https://abc123.execute-api.me-central-1.amazonaws.com", "ec2", false},
		{"https://abc.lambda-url.me-central-1.on.aws", "ec2", false},
		{"https://ec2.evil.amazonaws.com", "ec2", false},
		{"https://vpce-1.ec2.me-central-1.vpce.amazonaws.com.evil.net", "ec2", false},
		{"https://ec2.me-central-1.amazonaws.com.evil.net", "ec2", false},
		{"https://collector.example.net", "ec2", false},
		{"http://127.0.0.1:5000", "ec2", false},
	} {
		ep, err := ParseEndpoint(tt.url)
		if err != nil {
			t.Fatalf("ParseEndpoint(%q): %v", tt.url, err)
		}
		if got := ep.ServiceHost(tt.prefix); got != tt.want {
			t.Errorf("ParseEndpoint(%q).ServiceHost(%q) = %v, want %v", tt.url, tt.prefix, got, tt.want)
		}
	}
}

func TestParseEndpointLoopback(t *testing.T) {
	for url, want := range map[string]bool{
		"http://127.0.0.1:5000": true, "http://127.8.9.10": true, "http://[::1]:4566": true, "http://localhost:4566": true,
		"http://LOCALHOST.": true, "http://10.0.0.1": false, "http://localhost.example.net": false, "http://collector.example.net": false,
		"https://ec2.me-central-1.amazonaws.com": false, "http://[::ffff:127.0.0.1]": true, "http://0.0.0.0": false,
	} {
		ep, err := ParseEndpoint(url)
		if err != nil {
			t.Fatalf("ParseEndpoint(%q): %v", url, err)
		}
		if ep.Loopback != want {
			t.Errorf("ParseEndpoint(%q).Loopback = %v, want %v", url, ep.Loopback, want)
		}
	}
}
