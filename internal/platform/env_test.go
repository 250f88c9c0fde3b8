package platform

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/internal/cloud"
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

// unsetenv unsets k for the test: set but empty is not the same for the
// SDK (AWS_ENDPOINT_URL="" turns off the shared config's services section).
func unsetenv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "")
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}

// isolatedAWSEnv gives Open dummy credentials and no endpoint settings, the
// shared config file being configFile.
func isolatedAWSEnv(t *testing.T, configFile string) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_CONFIG_FILE", configFile)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_ENDPOINT_URL") || k == "AWS_PROFILE" || k == "AWS_DEFAULT_PROFILE" || k == "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS" {
			unsetenv(t, k)
		}
	}
}

// Every client's endpoint is checked, whichever way the SDK resolved it:
// the endpoints block, the service's environment variable (the name the SDK
// reads, typed here from the SDK's documentation, not derived), the global
// AWS_ENDPOINT_URL, the shared config profile's endpoint_url and its
// services section. An endpoint in another region fails Open and the error
// names where it was set; the same mechanism pointing at a loopback
// emulator opens, and the client sends its calls there.
func TestOpenChecksEveryResolvedEndpoint(t *testing.T) {
	services := []struct {
		key, env, section, host string
	}{
		{"ec2", "AWS_ENDPOINT_URL_EC2", "ec2", "ec2"},
		{"s3", "AWS_ENDPOINT_URL_S3", "s3", "s3"},
		{"kms", "AWS_ENDPOINT_URL_KMS", "kms", "kms"},
		{"sagemaker", "AWS_ENDPOINT_URL_SAGEMAKER", "sagemaker", "api.sagemaker"},
		{"ssm", "AWS_ENDPOINT_URL_SSM", "ssm", "ssm"},
		{"sts", "AWS_ENDPOINT_URL_STS", "sts", "sts"},
		{"autoscaling", "AWS_ENDPOINT_URL_AUTO_SCALING", "auto_scaling", "autoscaling"},
		{"applicationautoscaling", "AWS_ENDPOINT_URL_APPLICATION_AUTO_SCALING", "application_auto_scaling", "application-autoscaling"},
		{"cloudwatch", "AWS_ENDPOINT_URL_CLOUDWATCH", "cloudwatch", "monitoring"},
		{"secretsmanager", "AWS_ENDPOINT_URL_SECRETS_MANAGER", "secrets_manager", "secretsmanager"},
		{"eks", "AWS_ENDPOINT_URL_EKS", "eks", "eks"},
		{"iam", "AWS_ENDPOINT_URL_IAM", "iam", "iam"},
	}
	if got, want := len(services), len(cloud.Services()); got != want {
		t.Fatalf("the table covers %d services, the provider builds %d clients (%v)", got, want, cloud.Services())
	}
	type mechanism struct {
		name string
		// set configures url for the service and returns the provider
		// configuration's endpoints and profile.
		set func(t *testing.T, key, env, section, url string) (map[string]string, string)
		// wantIn is what the error must name; wantPath the configuration
		// error's attribute path ("" for a plain error).
		wantIn   func(key, env string) string
		wantPath func(key string) string
	}
	writeConfig := func(t *testing.T, body string) string {
		f := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	mechanisms := []mechanism{
		{
			name: "endpoints block",
			set: func(t *testing.T, key, _, _, url string) (map[string]string, string) {
				isolatedAWSEnv(t, os.DevNull)
				return map[string]string{key: url}, ""
			},
			wantIn:   func(key, _ string) string { return "endpoints." + key },
			wantPath: func(key string) string { return "endpoints." + key },
		},
		{
			name: "service environment variable",
			set: func(t *testing.T, _, env, _, url string) (map[string]string, string) {
				isolatedAWSEnv(t, os.DevNull)
				t.Setenv(env, url)
				return nil, ""
			},
			wantIn: func(_, env string) string { return env },
		},
		{
			name: "AWS_ENDPOINT_URL",
			set: func(t *testing.T, _, _, _, url string) (map[string]string, string) {
				isolatedAWSEnv(t, os.DevNull)
				t.Setenv("AWS_ENDPOINT_URL", url)
				return nil, ""
			},
			wantIn: func(string, string) string { return "AWS_ENDPOINT_URL" },
		},
		{
			name: "shared config profile endpoint_url",
			set: func(t *testing.T, _, _, _, url string) (map[string]string, string) {
				isolatedAWSEnv(t, writeConfig(t, "[profile lab]\nendpoint_url = "+url+"\n"))
				return nil, "lab"
			},
			wantIn: func(string, string) string { return "shared AWS config" },
		},
		{
			name: "shared config services section",
			set: func(t *testing.T, _, _, section, url string) (map[string]string, string) {
				isolatedAWSEnv(t, writeConfig(t, "[profile lab]\nservices = lab-endpoints\n\n[services lab-endpoints]\n"+section+" =\n  endpoint_url = "+url+"\n"))
				t.Setenv("AWS_PROFILE", "lab")
				return nil, ""
			},
			wantIn: func(string, string) string { return "shared AWS config" },
		},
	}
	for _, m := range mechanisms {
		for _, svc := range services {
			t.Run(m.name+"/"+svc.key, func(t *testing.T) {
				ctx := context.Background()
				outside := "https://" + svc.host + ".eu-west-1.amazonaws.com"
				eps, profile := m.set(t, svc.key, svc.env, svc.section, outside)
				cfg := Config{Region: "me-central-1", Profile: profile, Endpoints: eps, Residency: residency.PolicyConfig{Jurisdiction: "AE"}}
				_, err := Open(ctx, cfg)
				if err == nil {
					t.Fatalf("Open with the %s endpoint at %s = nil error, want the endpoint refused", svc.key, outside)
				}
				if want := m.wantIn(svc.key, svc.env); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "eu-west-1") {
					t.Errorf("Open error = %q, want it to name %s and the region", err, want)
				}
				var ce *residency.ConfigError
				switch isCE := errors.As(err, &ce); {
				case m.wantPath != nil && (!isCE || ce.Path != m.wantPath(svc.key)):
					t.Errorf("Open error = %#v, want a configuration error at %s", err, m.wantPath(svc.key))
				case m.wantPath == nil && isCE:
					t.Errorf("Open error = %#v: a setting outside the configuration must not be an attribute error", err)
				}

				// A loopback emulator: the one URL every mechanism, global
				// ones included, may give every client.
				inside := "http://127.0.0.1:4566"
				eps, profile = m.set(t, svc.key, svc.env, svc.section, inside)
				cfg.Endpoints, cfg.Profile = eps, profile
				env, err := Open(ctx, cfg)
				if err != nil {
					t.Fatalf("Open with the %s endpoint at %s: %v", svc.key, inside, err)
				}
				i := slices.IndexFunc(env.Clients.ResolvedEndpoints(), func(e cloud.ResolvedEndpoint) bool { return e.Service == svc.key })
				if i < 0 || env.Clients.ResolvedEndpoints()[i].URL != inside {
					t.Errorf("resolved endpoints %v, want %s at %s", env.Clients.ResolvedEndpoints(), svc.key, inside)
				}
			})
		}
	}
}

// Plain http is refused except to loopback; a host that is not the
// service's AWS endpoint needs allow_custom_endpoints (loopback needs
// nothing), and is then named in a warning. The same rules hold for every
// way an endpoint can be set.
func TestOpenEndpointTransportAndHost(t *testing.T) {
	type tc struct {
		name        string
		eps         map[string]string
		env         map[string]string
		allowCustom bool
		wantErr     []string // substrings; nil: opens
		wantPath    string   // configuration error's attribute
		wantWarning []string // substrings of the one warning; nil: none
	}
	for _, tt := range []tc{
		{name: "plain http to a collector", eps: map[string]string{"s3": "http://collector.example.net"},
			wantErr: []string{"http://collector.example.net", "plain http", "Use https", "loopback"}, wantPath: "endpoints.s3"},
		{name: "plain http to a collector even when custom endpoints are allowed", eps: map[string]string{"s3": "http://collector.example.net"}, allowCustom: true,
			wantErr: []string{"plain http"}, wantPath: "endpoints.s3"},
		{name: "plain http to an AWS host", eps: map[string]string{"ec2": "http://ec2.me-central-1.amazonaws.com"},
			wantErr: []string{"plain http", "https://ec2.me-central-1.amazonaws.com"}, wantPath: "endpoints.ec2"},
		{name: "plain http to a private address", eps: map[string]string{"kms": "http://10.0.0.5:4566"},
			wantErr: []string{"plain http"}, wantPath: "endpoints.kms"},
		{name: "https custom host", eps: map[string]string{"s3": "https://collector.example.net"},
			wantErr: []string{"not an AWS endpoint of s3", "allow_custom_endpoints = true", "https://s3.me-central-1.amazonaws.com"}, wantPath: "endpoints.s3"},
		{name: "anyone's host under amazonaws.com", eps: map[string]string{"sagemaker": "https://ec2-3-28-1-1.me-central-1.compute.amazonaws.com"},
			wantErr: []string{"not an AWS endpoint of sagemaker", "api.sagemaker.me-central-1.amazonaws.com"}, wantPath: "endpoints.sagemaker"},
		{name: "another service's endpoint", eps: map[string]string{"kms": "https://ec2.me-central-1.amazonaws.com"},
			wantErr: []string{"not an AWS endpoint of kms"}, wantPath: "endpoints.kms"},
		{name: "custom host from the environment", env: map[string]string{"AWS_ENDPOINT_URL_AUTO_SCALING": "https://collector.example.net"},
			wantErr: []string{"environment variable AWS_ENDPOINT_URL_AUTO_SCALING", "not an AWS endpoint of autoscaling"}},
		{name: "plain http from the environment", env: map[string]string{"AWS_ENDPOINT_URL": "http://collector.example.net"},
			wantErr: []string{"environment variable AWS_ENDPOINT_URL", "plain http"}},
		{name: "custom hosts allowed", allowCustom: true,
			eps:         map[string]string{"s3": "https://collector.example.net", "ec2": "https://ec2.me-central-1.amazonaws.com", "kms": "http://127.0.0.1:4566"},
			env:         map[string]string{"AWS_ENDPOINT_URL_SSM": "https://proxy.corp:8443"},
			wantWarning: []string{"allow_custom_endpoints", "s3 = https://collector.example.net (endpoints.s3)", "ssm = https://proxy.corp:8443 (environment variable AWS_ENDPOINT_URL_SSM)"}},
		{name: "AWS endpoints and their forms", eps: map[string]string{
			"ec2": "https://ec2-fips.me-central-1.amazonaws.com", "s3": "https://s3.dualstack.me-central-1.amazonaws.com",
			"sagemaker": "https://vpce-0123-abcd.api.sagemaker.me-central-1.vpce.amazonaws.com", "sts": "https://sts.me-central-1.api.aws",
			"autoscaling": "https://autoscaling.me-central-1.amazonaws.com", "applicationautoscaling": "https://application-autoscaling.me-central-1.amazonaws.com",
			"cloudwatch": "https://monitoring.me-central-1.amazonaws.com", "ssm": "https://ssm.me-central-1.amazonaws.com", "kms": "https://kms-fips.me-central-1.amazonaws.com"}},
		{name: "loopback emulators need no switch", eps: map[string]string{"ec2": "http://127.0.0.1:5000", "s3": "http://localhost:4566", "kms": "http://[::1]:4566", "ssm": "https://127.0.0.2:8443"},
			env: map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:5000"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			isolatedAWSEnv(t, os.DevNull)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			env, err := Open(context.Background(), Config{Region: "me-central-1", Endpoints: tt.eps, AllowCustomEndpoints: tt.allowCustom, Residency: residency.PolicyConfig{Jurisdiction: "AE"}})
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if len(tt.wantWarning) == 0 {
					if len(env.Warnings) != 0 {
						t.Errorf("warnings %+v, want none", env.Warnings)
					}
					return
				}
				if len(env.Warnings) != 1 || env.Warnings[0].Path != "allow_custom_endpoints" {
					t.Fatalf("warnings %+v, want one at allow_custom_endpoints", env.Warnings)
				}
				for _, w := range tt.wantWarning {
					if !strings.Contains(env.Warnings[0].Detail, w) {
						t.Errorf("warning %q, want it to contain %q", env.Warnings[0].Detail, w)
					}
				}
				for _, notCustom := range []string{"ec2 =", "kms ="} {
					if strings.Contains(env.Warnings[0].Detail, notCustom) {
						t.Errorf("warning %q names an AWS or loopback endpoint (%s)", env.Warnings[0].Detail, notCustom)
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("Open = nil error, want one containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open error %q, want it to contain %q", err, w)
				}
			}
			var ce *residency.ConfigError
			isCE := errors.As(err, &ce)
			if tt.wantPath != "" && (!isCE || ce.Path != tt.wantPath) {
				t.Errorf("Open error %#v, want a configuration error at %s", err, tt.wantPath)
			}
			if tt.wantPath == "" && isCE {
				t.Errorf("Open error %#v: a setting outside the configuration must not be an attribute error", err)
			}
		})
	}
}
