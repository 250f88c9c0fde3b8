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
