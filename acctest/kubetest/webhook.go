package kubetest

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	awsarn "github.com/aws/aws-sdk-go-v2/aws/arn"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// The token format of EKS (aws-iam-authenticator's pkg/token).
const (
	// TokenPrefix starts every EKS token; base64url (no padding) of the
	// presigned URL follows.
	TokenPrefix = "k8s-aws-v1."
	// ClusterIDHeader is the header, signed into the presigned URL, that
	// names the cluster the token is for.
	ClusterIDHeader = "x-k8s-aws-id"
	// DefaultClusterID is the cluster name a TokenWebhook expects until
	// SetClusterID.
	DefaultClusterID = "mlplatform-test"
	// PresignedURLExpiration is how long a presigned GetCallerIdentity URL
	// is good for after its X-Amz-Date, whatever its X-Amz-Expires says.
	PresignedURLExpiration = 15 * time.Minute

	maxTokenLen   = 4 << 10
	amzDateFormat = "20060102T150405Z"
)

// The query parameters a presigned GetCallerIdentity URL may carry
// (lower-cased); any other is refused.
var presignedParams = map[string]bool{
	"action":               true,
	"version":              true,
	"x-amz-algorithm":      true,
	"x-amz-credential":     true,
	"x-amz-date":           true,
	"x-amz-expires":        true,
	"x-amz-security-token": true,
	"x-amz-signature":      true,
	"x-amz-signedheaders":  true,
}

// TokenWebhook is the test's stand-in for EKS's authenticator
// (aws-iam-authenticator behind EKS's apiserver): a TokenReview webhook
// (authentication.k8s.io/v1) on a loopback HTTPS port with a CA of its own,
// which the apiserver calls for every bearer token (WithTokenWebhook). It
// does what aws-iam-authenticator's token verifier does and nothing more:
// it accepts only "k8s-aws-v1." followed by base64url (no padding) of a
// presigned STS GetCallerIdentity URL whose scheme and host are those of
// the STS endpoint it was given, path "/", no query parameter outside the
// presigned set, each once, Action=GetCallerIdentity, X-Amz-SignedHeaders
// naming x-k8s-aws-id, X-Amz-Expires between 0 and 900 and X-Amz-Date less
// than 15 minutes old; it then replays the URL (GET, with header
// x-k8s-aws-id set to the cluster name it expects and Accept
// application/json) to that STS endpoint, which verifies the signature
// (the cluster name is signed in) and names the caller. The caller's ARN,
// an assumed role canonicalised to its IAM role as EKS does
// (arn:aws:sts::ACCT:assumed-role/ROLE/SESSION becomes
// arn:aws:iam::ACCT:role/ROLE), goes through mapper, which stands for the
// cluster's access entries (aws-auth ConfigMap). No part of AWS is faked by
// it: the caller's identity is the STS endpoint's answer; in the tests that
// endpoint is moto (MotoSTS).
//
// Two differences from aws-iam-authenticator, for the emulator: the scheme
// must be the endpoint's (https against AWS, http against moto) where
// aws-iam-authenticator demands https, and refusals are answered with HTTP
// 200 and authenticated=false with the reason in status.error (the
// TokenReview convention) where it answers 403; the apiserver answers 401
// either way.
type TokenWebhook struct {
	// URL is the TokenReview endpoint the apiserver posts to.
	URL string
	// CACert is the PEM of the CA of the webhook's serving certificate.
	CACert []byte

	sts    *url.URL
	mapper func(arn string) (username string, groups []string, ok bool)
	client *http.Client

	mu      sync.Mutex
	cluster string
	reviews []Review
}

// Review is one TokenReview the webhook answered.
type Review struct {
	Token         string
	Authenticated bool
	Username      string
	Groups        []string
	// What STS answered (empty when the token was refused before the
	// replay) and the canonical ARN the mapper was given.
	ARN, CanonicalARN, Account, UserID string
	// Err is why the token was refused.
	Err string
}

// StartTokenWebhook starts the webhook for the STS endpoint stsEndpoint
// (e.g. https://sts.me-central-1.amazonaws.com, or MotoSTS.URL) with mapper
// from canonical ARN to Kubernetes user; it stops with t.Cleanup. It
// expects tokens for the cluster DefaultClusterID until SetClusterID.
func StartTokenWebhook(t testing.TB, stsEndpoint string, mapper func(arn string) (username string, groups []string, ok bool)) *TokenWebhook {
	t.Helper()
	sts, err := url.Parse(stsEndpoint)
	if err != nil || sts.Host == "" || (sts.Scheme != "https" && sts.Scheme != "http") {
		t.Fatalf("token webhook: STS endpoint %q is not an http(s) URL (%v)", stsEndpoint, err)
	}
	w := &TokenWebhook{
		sts:     sts,
		mapper:  mapper,
		cluster: DefaultClusterID,
		client: &http.Client{
			Timeout: 10 * time.Second,
			// As aws-iam-authenticator: a redirect is an answer, not a hop.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatalf("token webhook: serving certificate: %v", err)
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		t.Fatalf("token webhook: serving certificate: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(w.serve))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	t.Cleanup(w.client.CloseIdleConnections)
	w.URL = srv.URL + "/authenticate"
	w.CACert = crt
	return w
}

// SetClusterID sets the cluster name the webhook expects tokens for (the
// value it sends in x-k8s-aws-id when it replays them).
func (w *TokenWebhook) SetClusterID(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cluster = id
}

// ClusterID returns the cluster name the webhook expects tokens for.
func (w *TokenWebhook) ClusterID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cluster
}

// Reviews returns the TokenReviews answered so far, oldest first.
func (w *TokenWebhook) Reviews() []Review {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.reviews)
}

// ReviewOf returns the last review of token, and whether there was one.
func (w *TokenWebhook) ReviewOf(token string) (Review, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.reviews) - 1; i >= 0; i-- {
		if w.reviews[i].Token == token {
			return w.reviews[i], true
		}
	}
	return Review{}, false
}

// writeConfig writes the apiserver's webhook configuration: a kubeconfig
// whose cluster is the webhook, trusted through its CA.
func (w *TokenWebhook) writeConfig(path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["eks-authenticator"] = &clientcmdapi.Cluster{Server: w.URL, CertificateAuthorityData: w.CACert}
	kc.AuthInfos["kube-apiserver"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "eks-authenticator", AuthInfo: "kube-apiserver"}
	kc.CurrentContext = "webhook"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing the token webhook's configuration: %w", err)
	}
	return nil
}

func (w *TokenWebhook) serve(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(rw, "TokenReview only: POST", http.StatusMethodNotAllowed)
		return
	}
	var review authnv1.TokenReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&review); err != nil {
		http.Error(rw, "decoding TokenReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	if review.APIVersion != authnv1.SchemeGroupVersion.String() || review.Kind != "TokenReview" {
		http.Error(rw, fmt.Sprintf("expected a TokenReview of %s, got %s %s", authnv1.SchemeGroupVersion, review.APIVersion, review.Kind), http.StatusBadRequest)
		return
	}
	rec := w.review(r.Context(), review.Spec.Token)
	w.mu.Lock()
	w.reviews = append(w.reviews, rec)
	w.mu.Unlock()

	out := authnv1.TokenReview{TypeMeta: review.TypeMeta}
	if rec.Authenticated {
		out.Status.Authenticated = true
		out.Status.User = authnv1.UserInfo{
			Username: rec.Username,
			UID:      "aws-iam-authenticator:" + rec.Account + ":" + rec.UserID,
			Groups:   rec.Groups,
			Extra: map[string]authnv1.ExtraValue{
				"arn":          {rec.ARN},
				"canonicalArn": {rec.CanonicalARN},
				"accountId":    {rec.Account},
			},
		}
	} else {
		out.Status.Error = rec.Err
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(out)
}

// review decides on one token.
func (w *TokenWebhook) review(ctx context.Context, token string) Review {
	rec := Review{Token: token}
	id, err := w.verify(ctx, token)
	if id != nil {
		rec.ARN, rec.Account, rec.UserID = id.arn, id.account, id.userID
	}
	if err != nil {
		rec.Err = err.Error()
		return rec
	}
	rec.CanonicalARN, err = CanonicalARN(id.arn)
	if err != nil {
		rec.Err = "sts getCallerIdentity failed: " + err.Error()
		return rec
	}
	user, groups, ok := w.mapper(rec.CanonicalARN)
	if !ok || user == "" {
		rec.Err = fmt.Sprintf("ARN is not mapped: %s", rec.CanonicalARN)
		return rec
	}
	rec.Authenticated, rec.Username, rec.Groups = true, user, groups
	return rec
}

type callerIdentity struct{ arn, account, userID string }

// verify checks token as aws-iam-authenticator does and replays it to STS.
func (w *TokenWebhook) verify(ctx context.Context, token string) (*callerIdentity, error) {
	u, err := CheckToken(token, w.sts, time.Now())
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("sts getCallerIdentity failed: %w", err)
	}
	req.Header.Set(ClusterIDHeader, w.ClusterID())
	req.Header.Set("Accept", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) { // not the whole presigned URL in the message
			err = uerr.Err
		}
		return nil, fmt.Errorf("sts getCallerIdentity failed: error during GET: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("sts getCallerIdentity failed: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sts getCallerIdentity failed: error from AWS (expected 200, got %d). Body: %s", resp.StatusCode, body)
	}
	id, err := parseCallerIdentity(resp.Header.Get("Content-Type"), body)
	if err != nil {
		return nil, fmt.Errorf("sts getCallerIdentity failed: %w", err)
	}
	if strings.Count(id.userID, ":") > 1 {
		return id, fmt.Errorf("sts getCallerIdentity failed: malformed UserID %q", id.userID)
	}
	return id, nil
}

// CheckToken checks an EKS token without calling STS, as
// aws-iam-authenticator does before its replay, for the STS endpoint sts at
// time now, and returns its presigned URL.
func CheckToken(token string, sts *url.URL, now time.Time) (*url.URL, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("input token was not properly formatted: "+format, a...)
	}
	if len(token) > maxTokenLen {
		return nil, bad("token is too large")
	}
	enc, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return nil, bad("token is missing expected %q prefix", TokenPrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return nil, bad("%v", err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return nil, bad("%v", err)
	}
	if u.Scheme != sts.Scheme {
		return nil, bad("unexpected scheme %q in pre-signed URL", u.Scheme)
	}
	if u.Host != sts.Host {
		return nil, bad("unexpected hostname %q in pre-signed URL", u.Host)
	}
	if u.Path != "/" {
		return nil, bad("unexpected path in pre-signed URL")
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, bad("malformed query parameter")
	}
	lower := url.Values{}
	for k, vs := range query {
		if !presignedParams[strings.ToLower(k)] {
			return nil, bad("non-whitelisted query parameter %q", k)
		}
		if len(vs) != 1 {
			return nil, bad("query parameter with multiple values not supported")
		}
		lower.Set(strings.ToLower(k), vs[0])
	}
	if lower.Get("action") != "GetCallerIdentity" {
		return nil, bad("unexpected action parameter in pre-signed URL")
	}
	if !slices.ContainsFunc(strings.Split(lower.Get("x-amz-signedheaders"), ";"), func(h string) bool {
		return strings.EqualFold(h, ClusterIDHeader)
	}) {
		return nil, bad("client did not sign the %s header in the pre-signed URL", ClusterIDHeader)
	}
	expires, err := strconv.Atoi(lower.Get("x-amz-expires"))
	if err != nil || expires < 0 || expires > 900 {
		return nil, bad("invalid X-Amz-Expires parameter in pre-signed URL: %q", lower.Get("x-amz-expires"))
	}
	date := lower.Get("x-amz-date")
	if date == "" {
		return nil, bad("X-Amz-Date parameter must be present in pre-signed URL")
	}
	signed, err := time.Parse(amzDateFormat, date)
	if err != nil {
		return nil, bad("error parsing X-Amz-Date parameter %s into format %s: %v", date, amzDateFormat, err)
	}
	if now.After(signed.Add(PresignedURLExpiration)) {
		return nil, bad("X-Amz-Date parameter is expired (%.f minute expiration) %s", PresignedURLExpiration.Minutes(), signed)
	}
	return u, nil
}

// parseCallerIdentity reads GetCallerIdentity's answer: JSON, as real STS
// answers the replay's Accept: application/json, or XML (moto answers XML).
func parseCallerIdentity(contentType string, body []byte) (*callerIdentity, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	var id callerIdentity
	if mt == "application/json" {
		var j struct {
			GetCallerIdentityResponse struct {
				GetCallerIdentityResult struct{ Account, Arn, UserId string }
			}
		}
		if err := json.Unmarshal(body, &j); err != nil {
			return nil, fmt.Errorf("decoding GetCallerIdentity's answer: %w", err)
		}
		r := j.GetCallerIdentityResponse.GetCallerIdentityResult
		id = callerIdentity{arn: r.Arn, account: r.Account, userID: r.UserId}
	} else {
		var x struct {
			XMLName xml.Name                              `xml:"GetCallerIdentityResponse"`
			Result  struct{ Account, Arn, UserId string } `xml:"GetCallerIdentityResult"`
		}
		if err := xml.Unmarshal(body, &x); err != nil {
			return nil, fmt.Errorf("decoding GetCallerIdentity's answer: %w", err)
		}
		id = callerIdentity{arn: x.Result.Arn, account: x.Result.Account, userID: x.Result.UserId}
	}
	if id.arn == "" {
		return nil, fmt.Errorf("GetCallerIdentity's answer names no Arn: %.200s", body)
	}
	return &id, nil
}

// CanonicalARN returns the ARN EKS maps for a caller, as
// aws-iam-authenticator's arn.Canonicalize: an assumed role
// (arn:aws:sts::ACCT:assumed-role/ROLE/SESSION) becomes its IAM role
// (arn:aws:iam::ACCT:role/ROLE); IAM users, roles and accounts and STS
// federated users are kept; anything else, and partitions other than aws,
// aws-cn and aws-us-gov, are refused.
func CanonicalARN(arn string) (string, error) {
	p, err := awsarn.Parse(arn)
	if err != nil {
		return "", fmt.Errorf("arn '%s' is invalid: '%v'", arn, err)
	}
	switch p.Partition {
	case "aws", "aws-cn", "aws-us-gov":
	default:
		return "", fmt.Errorf("arn '%s' does not have a recognized partition", arn)
	}
	parts := strings.Split(p.Resource, "/")
	switch p.Service {
	case "sts":
		switch parts[0] {
		case "federated-user":
			return arn, nil
		case "assumed-role":
			if len(parts) < 3 {
				return "", fmt.Errorf("assumed-role arn '%s' does not have a role", arn)
			}
			return awsarn.ARN{
				Partition: p.Partition,
				Service:   "iam",
				AccountID: p.AccountID,
				Resource:  "role/" + strings.Join(parts[1:len(parts)-1], "/"),
			}.String(), nil
		}
		return "", fmt.Errorf("unrecognized resource %s for service sts", p.Resource)
	case "iam":
		switch parts[0] {
		case "role", "user", "root":
			return arn, nil
		}
		return "", fmt.Errorf("unrecognized resource %s for service iam", p.Resource)
	}
	return "", fmt.Errorf("service %s in arn %s is not a valid service for identities", p.Service, arn)
}
