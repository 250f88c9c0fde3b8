package kubetest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	testRegion  = "me-central-1"
	testAccount = "123456789012" // moto's default account
	testCluster = "ml-uae-1"
	gateRole    = "arn:aws:iam::" + testAccount + ":role/mlplatform-gate"
	otherRole   = "arn:aws:iam::" + testAccount + ":role/someone-else"
)

// tokenOptions change how eksToken signs.
type tokenOptions struct {
	shift         time.Duration // added to the signing time
	noClusterName bool          // sign no x-k8s-aws-id header
}

// eksToken makes an EKS token as `aws eks get-token` does, with
// aws-sdk-go-v2's STS presign client: GetCallerIdentity presigned for the
// STS endpoint with the header x-k8s-aws-id (the cluster's name) signed in
// and X-Amz-Expires=60 (hoisted into the query), base64url without padding
// after "k8s-aws-v1.".
func eksToken(t *testing.T, endpoint, cluster string, creds aws.Credentials, o tokenOptions) string {
	t.Helper()
	client := sts.New(sts.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }),
	})
	req, err := sts.NewPresignClient(client).PresignGetCallerIdentity(context.Background(), &sts.GetCallerIdentityInput{}, func(po *sts.PresignOptions) {
		if o.shift != 0 {
			po.Presigner = shiftedPresigner{o.shift}
		}
		po.ClientOptions = append(po.ClientOptions, func(so *sts.Options) {
			if !o.noClusterName {
				so.APIOptions = append(so.APIOptions, smithyhttp.AddHeaderValue(ClusterIDHeader, cluster))
			}
			so.APIOptions = append(so.APIOptions, smithyhttp.AddHeaderValue("X-Amz-Expires", "60"))
		})
	})
	if err != nil {
		t.Fatalf("presigning GetCallerIdentity: %v", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL))
}

// shiftedPresigner signs as if the clock were off by its duration.
type shiftedPresigner struct{ by time.Duration }

func (p shiftedPresigner) PresignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, payloadHash, service, region string, signingTime time.Time, optFns ...func(*v4.SignerOptions)) (string, http.Header, error) {
	return v4.NewSigner().PresignHTTP(ctx, creds, r, payloadHash, service, region, signingTime.Add(p.by), optFns...)
}

// assumeRole assumes roleARN in moto through the STS endpoint (the front
// learns the session's secret from the answer).
func assumeRole(t *testing.T, endpoint, roleARN, session string) aws.Credentials {
	t.Helper()
	client := sts.New(sts.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "base-secret"}, nil
		}),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := client.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(roleARN), RoleSessionName: aws.String(session)})
	if err != nil {
		t.Fatalf("assuming %s in moto: %v", roleARN, err)
	}
	c := out.Credentials
	return aws.Credentials{AccessKeyID: aws.ToString(c.AccessKeyId), SecretAccessKey: aws.ToString(c.SecretAccessKey), SessionToken: aws.ToString(c.SessionToken)}
}

// TestEKSTokenWebhook proves EKS token authentication end to end against
// the real apiserver: a token presigned by aws-sdk-go-v2 for an assumed
// role authenticates (the webhook replays it to moto through MotoSTS, which
// checks its signature) as the user the role maps to, whom RBAC then
// governs; tokens for another cluster, expired, for another host, without
// the cluster name signed, with a forged signature, or of an unmapped role
// are refused with 401.
func TestEKSTokenWebhook(t *testing.T) {
	Require(t)
	front := StartMotoSTS(t, startMoto(t))
	wh := StartTokenWebhook(t, front.URL, func(arn string) (string, []string, bool) {
		if arn == gateRole {
			return "mlplatform:gate", []string{"mlplatform:gates"}, true
		}
		return "", nil, false
	})
	wh.SetClusterID(testCluster)
	cp := Start(t, WithTokenWebhook(wh), WithoutScheduler())
	ctx := testContext(t, 2*time.Minute)
	gate := assumeRole(t, front.URL, gateRole, "gate-session")
	other := assumeRole(t, front.URL, otherRole, "other-session")

	tokenClient := func(token string) kubernetes.Interface {
		return clientset(t, &rest.Config{Host: cp.Endpoint(), TLSClientConfig: rest.TLSClientConfig{CAData: cp.CACert()}, BearerToken: token})
	}
	whoami := func(token string) (*authnv1.SelfSubjectReview, error) {
		return tokenClient(token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	}

	t.Run("a token of a mapped role authenticates", func(t *testing.T) {
		token := eksToken(t, front.URL, testCluster, gate, tokenOptions{})
		r, err := whoami(token)
		if err != nil {
			t.Fatalf("SelfSubjectReview with the token: %v\nwebhook: %+v", err, lastReview(wh, token))
		}
		u := r.Status.UserInfo
		if u.Username != "mlplatform:gate" || !slices.Contains(u.Groups, "mlplatform:gates") || !slices.Contains(u.Groups, "system:authenticated") {
			t.Errorf("authenticated as %q in %v, want mlplatform:gate in mlplatform:gates and system:authenticated", u.Username, u.Groups)
		}
		rv, _ := wh.ReviewOf(token)
		if want := "arn:aws:sts::" + testAccount + ":assumed-role/mlplatform-gate/gate-session"; rv.ARN != want || rv.CanonicalARN != gateRole {
			t.Errorf("STS named %q (canonical %q), want %q (canonical %q)", rv.ARN, rv.CanonicalARN, want, gateRole)
		}
		if got := u.Extra["canonicalArn"]; len(got) != 1 || got[0] != gateRole {
			t.Errorf("extra canonicalArn = %v, want [%s]", got, gateRole)
		}
		t.Logf("authenticated as %s %v (uid %s) from %s", u.Username, u.Groups, u.UID, rv.ARN)
	})

	t.Run("the mapped user is governed by RBAC", func(t *testing.T) {
		cp.RegisterNode(t, NodeSpec{Name: "gpu-0", Taints: []corev1.Taint{pendingTaint}, GPUs: 8})
		gateClient := tokenClient(eksToken(t, front.URL, testCluster, gate, tokenOptions{}))
		untaint := []byte(`[{"op":"test","path":"/spec/taints/0/key","value":"mlplatform.io/hwprobe"},{"op":"remove","path":"/spec/taints/0"}]`)
		_, err := gateClient.CoreV1().Nodes().Patch(ctx, "gpu-0", types.JSONPatchType, untaint, metav1.PatchOptions{})
		wantForbidden(t, "the gate untainting before any binding", err, `User "mlplatform:gate" cannot patch resource "nodes"`)

		admin := clientset(t, cp.Admin())
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "mlplatform:gate"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch", "update"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "mlplatform:gate"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "mlplatform:gates"}},
		}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// RBAC's cache takes the binding in within moments.
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, err := gateClient.CoreV1().Nodes().Patch(ctx, "gpu-0", types.JSONPatchType, untaint, metav1.PatchOptions{})
			if err == nil {
				if len(n.Spec.Taints) != 0 {
					t.Errorf("taints = %v after the gate removed its", n.Spec.Taints)
				}
				break
			}
			if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
				t.Fatalf("the gate untainting with its binding: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	wrongSecret := gate
	wrongSecret.SecretAccessKey = "not-" + gate.SecretAccessKey
	refused := []struct {
		name, token, because string
	}{
		{"another cluster's token", eksToken(t, front.URL, "another-cluster", gate, tokenOptions{}), "SignatureDoesNotMatch"},
		{"an expired token", eksToken(t, front.URL, testCluster, gate, tokenOptions{shift: -16 * time.Minute}), "X-Amz-Date parameter is expired"},
		{"a token for AWS's STS (another scheme and host)", eksToken(t, "https://sts."+testRegion+".amazonaws.com", testCluster, gate, tokenOptions{}), `unexpected scheme "https"`},
		{"a token for another host, same scheme", eksToken(t, strings.Replace(front.URL, "127.0.0.1", "localhost", 1), testCluster, gate, tokenOptions{}), `unexpected hostname "localhost:`},
		{"a token without the cluster name signed", eksToken(t, front.URL, testCluster, gate, tokenOptions{noClusterName: true}), "client did not sign the x-k8s-aws-id header"},
		{"a forged signature", eksToken(t, front.URL, testCluster, wrongSecret, tokenOptions{}), "SignatureDoesNotMatch"},
		{"an unmapped role's token", eksToken(t, front.URL, testCluster, other, tokenOptions{}), "ARN is not mapped: " + otherRole},
		{"not an EKS token", "k8s-aws-v1.not*base64", "input token was not properly formatted"},
	}
	for _, tc := range refused {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			_, err := whoami(tc.token)
			if !apierrors.IsUnauthorized(err) {
				t.Fatalf("SelfSubjectReview: %v, want 401 Unauthorized", err)
			}
			rv, ok := wh.ReviewOf(tc.token)
			if !ok {
				t.Fatalf("the webhook reviewed no such token")
			}
			if rv.Authenticated || !strings.Contains(rv.Err, tc.because) {
				t.Errorf("webhook: authenticated %v, %q; want refused because %q", rv.Authenticated, rv.Err, tc.because)
			}
			t.Logf("401; webhook: %s", rv.Err)
		})
	}
}

func lastReview(w *TokenWebhook, token string) Review {
	r, _ := w.ReviewOf(token)
	return r
}

// TestCheckToken covers aws-iam-authenticator's checks of a token before
// its replay, one at a time.
func TestCheckToken(t *testing.T) {
	endpoint := &url.URL{Scheme: "https", Host: "sts.me-central-1.amazonaws.com"}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	good := func() url.Values {
		return url.Values{
			"Action":              {"GetCallerIdentity"},
			"Version":             {"2011-06-15"},
			"X-Amz-Algorithm":     {"AWS4-HMAC-SHA256"},
			"X-Amz-Credential":    {"ASIAEXAMPLE/20261127/me-central-1/sts/aws4_request"},
			"X-Amz-Date":          {now.Add(-time.Minute).Format(amzDateFormat)},
			"X-Amz-Expires":       {"60"},
			"X-Amz-SignedHeaders": {"host;x-k8s-aws-id"},
			"X-Amz-Signature":     {"0123abcd"},
		}
	}
	token := func(scheme, host, path string, q url.Values) string {
		u := url.URL{Scheme: scheme, Host: host, Path: path, RawQuery: q.Encode()}
		return TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(u.String()))
	}
	with := func(k, v string) url.Values { q := good(); q.Set(k, v); return q }
	without := func(k string) url.Values { q := good(); q.Del(k); return q }
	host := endpoint.Host
	cases := []struct {
		name, token, err string
	}{
		{"good", token("https", host, "/", good()), ""},
		{"upper-case parameter names", token("https", host, "/", url.Values{"action": {"GetCallerIdentity"}, "x-amz-date": {now.Format(amzDateFormat)}, "x-amz-expires": {"0"}, "x-amz-signedheaders": {"X-K8s-Aws-Id;host"}}), ""},
		{"no prefix", strings.TrimPrefix(token("https", host, "/", good()), TokenPrefix), "missing expected \"k8s-aws-v1.\" prefix"},
		{"padded base64", token("https", host, "/", good()) + "==", "illegal base64"},
		{"too large", TokenPrefix + strings.Repeat("A", maxTokenLen), "token is too large"},
		{"http", token("http", host, "/", good()), `unexpected scheme "http"`},
		{"another host", token("https", "sts.evil.example", "/", good()), `unexpected hostname "sts.evil.example"`},
		{"another port", token("https", host+":8443", "/", good()), "unexpected hostname"},
		{"another path", token("https", host, "/x", good()), "unexpected path"},
		{"unknown parameter", token("https", host, "/", with("RoleArn", "x")), `non-whitelisted query parameter "RoleArn"`},
		{"repeated parameter", token("https", host, "/", func() url.Values { q := good(); q.Add("Action", "GetCallerIdentity"); return q }()), "multiple values"},
		{"another action", token("https", host, "/", with("Action", "AssumeRole")), "unexpected action"},
		{"cluster name not signed", token("https", host, "/", with("X-Amz-SignedHeaders", "host")), "did not sign the x-k8s-aws-id header"},
		{"no X-Amz-Expires", token("https", host, "/", without("X-Amz-Expires")), "invalid X-Amz-Expires"},
		{"X-Amz-Expires over 900", token("https", host, "/", with("X-Amz-Expires", "901")), "invalid X-Amz-Expires"},
		{"negative X-Amz-Expires", token("https", host, "/", with("X-Amz-Expires", "-1")), "invalid X-Amz-Expires"},
		{"no X-Amz-Date", token("https", host, "/", without("X-Amz-Date")), "X-Amz-Date parameter must be present"},
		{"malformed X-Amz-Date", token("https", host, "/", with("X-Amz-Date", "2026-11-27")), "error parsing X-Amz-Date"},
		{"signed 15 minutes ago", token("https", host, "/", with("X-Amz-Date", now.Add(-15*time.Minute).Format(amzDateFormat))), ""},
		{"signed 15 minutes and a second ago", token("https", host, "/", with("X-Amz-Date", now.Add(-15*time.Minute-time.Second).Format(amzDateFormat))), "X-Amz-Date parameter is expired"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := CheckToken(tc.token, endpoint, now)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.err == "" && u.Host != host:
				t.Errorf("URL %v", u)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one saying %q", err, tc.err)
			}
		})
	}
}

func TestCanonicalARN(t *testing.T) {
	for _, tc := range []struct{ arn, want, err string }{
		{"arn:aws:sts::123456789012:assumed-role/mlplatform-gate/i-0123456789abcdef0", "arn:aws:iam::123456789012:role/mlplatform-gate", ""},
		{"arn:aws-cn:sts::123456789012:assumed-role/eks-node/i-0a", "arn:aws-cn:iam::123456789012:role/eks-node", ""},
		{"arn:aws:iam::123456789012:role/mlplatform-gate", "arn:aws:iam::123456789012:role/mlplatform-gate", ""},
		{"arn:aws:iam::123456789012:user/alice", "arn:aws:iam::123456789012:user/alice", ""},
		{"arn:aws:iam::123456789012:root", "arn:aws:iam::123456789012:root", ""},
		{"arn:aws:sts::123456789012:federated-user/bob", "arn:aws:sts::123456789012:federated-user/bob", ""},
		{"arn:aws:sts::123456789012:assumed-role/no-session", "", "does not have a role"},
		{"arn:aws:sts::123456789012:user/moto", "", "unrecognized resource user/moto for service sts"},
		{"arn:aws:iam::123456789012:group/admins", "", "unrecognized resource"},
		{"arn:aws:s3:::bucket", "", "not a valid service for identities"},
		{"arn:aws-iso:iam::123456789012:role/x", "", "does not have a recognized partition"},
		{"not-an-arn", "", "is invalid"},
	} {
		got, err := CanonicalARN(tc.arn)
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CanonicalARN(%q) = %q, %v; want %q, error %q", tc.arn, got, err, tc.want, tc.err)
		}
	}
}

func TestCredentialsIn(t *testing.T) {
	assumeRole := `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
<Credentials><AccessKeyId>ASIAEXAMPLE000000001</AccessKeyId><SecretAccessKey>s3cr3t</SecretAccessKey><SessionToken>tok</SessionToken><Expiration>2026-11-27T13:00:00Z</Expiration></Credentials>
<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>
</AssumeRoleResult></AssumeRoleResponse>`
	createAccessKey := `<CreateAccessKeyResponse><CreateAccessKeyResult><AccessKey><UserName>alice</UserName><AccessKeyId>AKIAEXAMPLE000000002</AccessKeyId><Status>Active</Status><SecretAccessKey>other</SecretAccessKey></AccessKey></CreateAccessKeyResult></CreateAccessKeyResponse>`
	got := append(credentialsIn([]byte(assumeRole)), credentialsIn([]byte(createAccessKey))...)
	want := []aws.Credentials{
		{AccessKeyID: "ASIAEXAMPLE000000001", SecretAccessKey: "s3cr3t", SessionToken: "tok"},
		{AccessKeyID: "AKIAEXAMPLE000000002", SecretAccessKey: "other"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("credentialsIn = %+v, want %+v", got, want)
	}
}

// startMoto starts a moto_server of the test's own on a loopback port and
// returns its URL; it skips the test without moto_server where CI is not
// set. (acctest.StartMoto does the same; this package does not import
// acctest, which brings the whole provider into its test binary.)
func startMoto(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath(cmp.Or(os.Getenv("MOTO_SERVER"), "moto_server"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: moto_server not found: %v", err)
		}
		t.Skipf("skipping: moto_server not found (pip install 'moto[server]', or set MOTO_SERVER): %v", err)
	}
	var errs []string
	for try := 1; try <= 3; try++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		out := &syncBuffer{}
		cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = procAttr()
		for _, kv := range os.Environ() { // the SDK's settings are the clients'
			if !strings.HasPrefix(kv, "AWS_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "PYTHONUNBUFFERED=1")
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting moto_server: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		if err := waitMoto(base, out, exited); err != nil {
			stop()
			errs = append(errs, fmt.Sprintf("try %d: %v\n%s", try, err, out.String()))
			continue
		}
		t.Cleanup(func() {
			stop()
			if t.Failed() {
				t.Logf("moto output:\n%s", out.String())
			}
		})
		return base
	}
	t.Fatalf("starting moto_server:\n%s", strings.Join(errs, "\n"))
	return ""
}

// waitMoto waits until moto answers /moto-api/ and says it listens on
// base (another process may have taken the port since it was free).
func waitMoto(base string, out *syncBuffer, exited <-chan struct{}) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/moto-api/"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(out.String(), "Running on "+base) {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("moto_server exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("moto_server did not answer on %s within a minute", base)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestParseCallerIdentity covers both answers of GetCallerIdentity: JSON,
// which real STS sends for the replay's Accept: application/json, and XML,
// which moto sends.
func TestParseCallerIdentity(t *testing.T) {
	const arn = "arn:aws:sts::123456789012:assumed-role/mlplatform-gate/i-0a"
	for _, tc := range []struct{ contentType, body string }{
		{"application/json", `{"GetCallerIdentityResponse":{"GetCallerIdentityResult":{"Account":"123456789012","Arn":"` + arn + `","UserId":"AROAEXAMPLE:i-0a"},"ResponseMetadata":{"RequestId":"r"}}}`},
		{"text/xml", `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>` + arn + `</Arn><UserId>AROAEXAMPLE:i-0a</UserId><Account>123456789012</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetCallerIdentityResponse>`},
	} {
		id, err := parseCallerIdentity(tc.contentType, []byte(tc.body))
		if err != nil || id.arn != arn || id.account != "123456789012" || id.userID != "AROAEXAMPLE:i-0a" {
			t.Errorf("%s: %+v, %v", tc.contentType, id, err)
		}
	}
	if _, err := parseCallerIdentity("text/xml", []byte(`<ListAllMyBucketsResult/>`)); err == nil {
		t.Errorf("an S3 answer read as a caller identity")
	}
}
