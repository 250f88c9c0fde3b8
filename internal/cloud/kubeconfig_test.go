package cloud

import (
	"bytes"
	"strings"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
current-context: gate
clusters:
- name: prod
  cluster:
    server: https://10.0.0.10:6443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
contexts:
- name: gate
  context: {cluster: prod, user: gate}
- name: other
  context: {cluster: prod, user: certs}
users:
- name: gate
  user:
    token: s3cr3t-t0ken-value
- name: certs
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5LXNlY3JldC12YWx1ZQ==
`

func TestParseKubeconfig(t *testing.T) {
	k, err := ParseKubeconfig([]byte(testKubeconfig), "")
	if err != nil {
		t.Fatal(err)
	}
	if k.Context != "gate" || k.Access.Endpoint != "https://10.0.0.10:6443" || k.Access.Token != "s3cr3t-t0ken-value" || !bytes.Contains(k.Access.CAPEM, []byte("BEGIN CERTIFICATE")) {
		t.Errorf("current context: %+v", k)
	}
	k, err = ParseKubeconfig([]byte(testKubeconfig), "other")
	if err != nil || string(k.Access.CertPEM) != "cert" || string(k.Access.KeyPEM) != "key-secret-value" || k.Access.Token != "" {
		t.Errorf("context other: %+v, %v", k, err)
	}
	for _, tc := range []struct {
		name, from, to, context string
		unsupported             bool
		want                    string
	}{
		{name: "exec", from: "    token: s3cr3t-t0ken-value\n", to: "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n      args: [eks, get-token]\n", unsupported: true, want: "runs a command"},
		{name: "auth provider", from: "    token: s3cr3t-t0ken-value\n", to: "    auth-provider:\n      name: oidc\n      config: {id-token: s3cr3t-t0ken-value}\n", unsupported: true, want: "auth-provider"},
		{name: "token file", from: "    token: s3cr3t-t0ken-value\n", to: "    tokenFile: /var/run/token\n", unsupported: true, want: "names files"},
		{name: "basic auth", from: "    token: s3cr3t-t0ken-value\n", to: "    username: admin\n    password: s3cr3t-t0ken-value\n", unsupported: true, want: "username and password"},
		{name: "no credentials", from: "    token: s3cr3t-t0ken-value\n", to: "    {}\n", want: "no credentials"},
		{name: "http", from: "https://10.0.0.10", to: "http://10.0.0.10", unsupported: true, want: "not https"},
		{name: "insecure", from: "    server:", to: "    insecure-skip-tls-verify: true\n    server:", unsupported: true, want: "insecure-skip-tls-verify"},
		{name: "proxy", from: "    server:", to: "    proxy-url: https://proxy.example:3128\n    server:", unsupported: true, want: "proxy-url"},
		{name: "ca file", from: "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=", to: "    certificate-authority: /etc/ca.crt", unsupported: true, want: "names a file"},
		{name: "no ca", from: "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n", to: "", want: "no certificate-authority-data"},
		{name: "missing context", context: "nope", want: `no context "nope"`},
		{name: "no current context", from: "current-context: gate\n", to: "", want: "no current-context"},
		{name: "not yaml", from: "apiVersion: v1", to: "apiVersion: [s3cr3t-t0ken-value", want: "does not hold a kubeconfig"},
		{name: "cert without key", context: "other", from: "    client-key-data: a2V5LXNlY3JldC12YWx1ZQ==\n", to: "", want: "without its key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := testKubeconfig
			if tc.from != "" {
				text = strings.Replace(text, tc.from, tc.to, 1)
			}
			_, err := ParseKubeconfig([]byte(text), tc.context)
			ke, ok := err.(*KubeconfigError)
			if !ok || ke.Unsupported != tc.unsupported || !strings.Contains(ke.Msg, tc.want) {
				t.Fatalf("got %#v (%v), want a KubeconfigError (unsupported %v) saying %q", err, err, tc.unsupported, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "key-secret") {
				t.Errorf("the error shows a credential: %v", err)
			}
		})
	}
}

// FuzzParseKubeconfig: any input parses or is refused with a
// KubeconfigError, and no error repeats a credential of the input.
func FuzzParseKubeconfig(f *testing.F) {
	f.Add([]byte(testKubeconfig), "")
	f.Add([]byte(testKubeconfig), "other")
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"https://h"}}]}`), "")
	f.Add([]byte("users:\n- name: u\n  user:\n    token: s3cr3t-t0ken-value\n"), "")
	f.Fuzz(func(t *testing.T, data []byte, context string) {
		k, err := ParseKubeconfig(data, context)
		if err != nil {
			if _, ok := err.(*KubeconfigError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if bytes.Contains(data, []byte("s3cr3t-t0ken-value")) && strings.Contains(err.Error(), "s3cr3t-t0ken-value") {
				t.Fatalf("the error shows the token: %v", err)
			}
			return
		}
		if !strings.HasPrefix(k.Access.Endpoint, "https://") || len(k.Access.CAPEM) == 0 || k.Access.Token == "" && len(k.Access.CertPEM) == 0 {
			t.Fatalf("accepted without server, CA or credentials: %+v", k.Access.Endpoint)
		}
	})
}
