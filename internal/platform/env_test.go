package platform

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// An endpoint override naming another region is a configuration error;
// custom hosts stay allowed and the signing region stays the provider's.
func TestOpenChecksEndpoints(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_EC2", "")
	cfg := func(eps map[string]string) Config {
		return Config{Region: "me-central-1", Endpoints: eps, Residency: residency.PolicyConfig{Jurisdiction: "AE"}}
	}
	for _, tc := range []struct {
		eps      map[string]string
		wantPath string
	}{
		{eps: map[string]string{"ec2": "https://ec2.eu-west-1.amazonaws.com"}, wantPath: "endpoints.ec2"},
		{eps: map[string]string{"s3": "https://s3.cn-north-1.amazonaws.com.cn"}, wantPath: "endpoints.s3"},
		{eps: map[string]string{"kms": "https://kms.amazonaws.com", "ec2": "http://127.0.0.1:5000"}, wantPath: "endpoints.kms"},
	} {
		_, err := Open(context.Background(), cfg(tc.eps))
		var ce *residency.ConfigError
		if !errors.As(err, &ce) || ce.Path != tc.wantPath {
			t.Errorf("Open(endpoints %v) = %v, want a configuration error at %s", tc.eps, err, tc.wantPath)
		}
	}
	env, err := Open(context.Background(), cfg(map[string]string{
		"ec2":       "http://127.0.0.1:5000",
		"sagemaker": "https://vpce-0123-abcd.api.sagemaker.me-central-1.vpce.amazonaws.com",
		"s3":        "https://s3.me-central-1.amazonaws.com",
	}))
	if err != nil {
		t.Fatalf("Open with a custom host, a VPC endpoint and an in-region endpoint: %v", err)
	}
	if r := env.Clients.EC2.Options().Region; r != "me-central-1" {
		t.Errorf("EC2 signs for %q with an endpoint override, want me-central-1", r)
	}

	t.Setenv("AWS_ENDPOINT_URL_EC2", "https://ec2.eu-west-1.amazonaws.com")
	if _, err := Open(context.Background(), cfg(nil)); err == nil || !strings.Contains(err.Error(), "AWS_ENDPOINT_URL_EC2") {
		t.Errorf("Open with AWS_ENDPOINT_URL_EC2 in eu-west-1 = %v, want an error naming the variable", err)
	}
}
