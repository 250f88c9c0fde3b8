package kubetest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// emptySHA256 is the SHA-256 of an empty payload: a GET's.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// motoClient forwards presigned requests to moto.
var motoClient = &http.Client{Timeout: 30 * time.Second}

// MotoSTS is the STS endpoint of the tests' EKS tokens: moto behind a front
// on a loopback port that does, for a presigned request (SigV4 in the query
// string), what real STS does and moto 5.2.1 does not. moto routes a
// request without an Authorization header to S3 (a presigned
// GetCallerIdentity is answered by ListBuckets), reads the caller's access
// key from that header only, and checks no signature unless IAM is
// enforced, and then only a header's. So the front, for each presigned
// request:
//
//   - knows the secret of the access key it names (credentials moto issued
//     in an answer that went through the front: AssumeRole, GetSessionToken,
//     CreateAccessKey; or AddCredentials), else answers 403
//     InvalidClientTokenId, as STS does for a key it does not know;
//   - checks the session token, that X-Amz-Date is less than 15 minutes old
//     (STS's rule for presigned URLs) and the SigV4 signature over the
//     request as received (method, path, query, the signed headers with the
//     values received: x-k8s-aws-id among them), else 403;
//   - then forwards it to moto with the same signature moved into an
//     Authorization header, so that moto serves it as STS and answers with
//     the identity of that access key: its IAM user, or its assumed role.
//
// Every other request (presigned for another service, or signed in its
// Authorization header) goes to moto as it is. The identity is moto's answer;
// the front adds the checks moto lacks and decides no identity.
type MotoSTS struct {
	// URL is the endpoint: an STS (and any service's) base URL for the SDK.
	URL string

	moto  *url.URL
	proxy *httputil.ReverseProxy

	mu    sync.Mutex
	creds map[string]aws.Credentials // by access key id
}

// StartMotoSTS starts the front for the moto at motoURL; it stops with
// t.Cleanup.
func StartMotoSTS(t testing.TB, motoURL string) *MotoSTS {
	t.Helper()
	m, err := url.Parse(motoURL)
	if err != nil || m.Host == "" {
		t.Fatalf("moto STS front: moto URL %q: %v", motoURL, err)
	}
	s := &MotoSTS{moto: m, creds: map[string]aws.Credentials{}}
	s.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(m)
			r.Out.Host = r.In.Host // moto's answers name the host the client used
		},
		ModifyResponse: s.learn,
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// AddCredentials makes the front know c's secret, to check the signatures
// made with it.
func (s *MotoSTS) AddCredentials(c aws.Credentials) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creds[c.AccessKeyID] = c
}

func (s *MotoSTS) credentials(akid string) (aws.Credentials, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.creds[akid]
	return c, ok
}

// ServeHTTP serves one request: presigned ones checked and forwarded with
// an Authorization header, the rest proxied.
func (s *MotoSTS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("X-Amz-Signature") == "" || !strings.Contains(q.Get("X-Amz-Credential"), "/sts/aws4_request") {
		s.proxy.ServeHTTP(w, r) // not a presigned STS request
		return
	}
	auth, err := s.checkPresigned(r.Context(), r, q, time.Now())
	if err != nil {
		writeSTSError(w, err)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, s.moto.JoinPath(r.URL.Path).String(), nil)
	if err != nil {
		writeSTSError(w, &stsError{http.StatusInternalServerError, "InternalFailure", err.Error()})
		return
	}
	out.URL.RawQuery = r.URL.RawQuery
	out.Host = r.Host
	out.Header.Set("Authorization", auth)
	out.Header.Set("X-Amz-Date", q.Get("X-Amz-Date"))
	if tok := q.Get("X-Amz-Security-Token"); tok != "" {
		out.Header.Set("X-Amz-Security-Token", tok)
	}
	for _, h := range []string{"Accept", ClusterIDHeader} {
		if v := r.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	resp, err := motoClient.Do(out)
	if err != nil {
		writeSTSError(w, &stsError{http.StatusBadGateway, "InternalFailure", "moto: " + err.Error()})
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// stsError is an STS error answer.
type stsError struct {
	status        int
	code, message string
}

func (e *stsError) Error() string { return e.code + ": " + e.message }

func writeSTSError(w http.ResponseWriter, err error) {
	e, ok := err.(*stsError)
	if !ok {
		e = &stsError{http.StatusInternalServerError, "InternalFailure", err.Error()}
	}
	typ := "Sender"
	if e.status >= 500 {
		typ = "Receiver"
	}
	var msg bytes.Buffer
	_ = xml.EscapeText(&msg, []byte(e.message))
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(e.status)
	fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>mlplatform-kubetest</RequestId></ErrorResponse>`, typ, e.code, msg.String())
}

// checkPresigned checks a presigned request as STS does and returns the
// Authorization header that carries the same signature.
func (s *MotoSTS) checkPresigned(ctx context.Context, r *http.Request, q url.Values, now time.Time) (string, error) {
	denied := func(code, format string, a ...any) error {
		return &stsError{http.StatusForbidden, code, fmt.Sprintf(format, a...)}
	}
	if alg := q.Get("X-Amz-Algorithm"); alg != "AWS4-HMAC-SHA256" {
		return "", &stsError{http.StatusBadRequest, "IncompleteSignature", fmt.Sprintf("unsupported X-Amz-Algorithm %q", alg)}
	}
	credential := q.Get("X-Amz-Credential")
	scope := strings.Split(credential, "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return "", &stsError{http.StatusBadRequest, "IncompleteSignature", fmt.Sprintf("malformed X-Amz-Credential %q", credential)}
	}
	creds, ok := s.credentials(scope[0])
	if !ok || creds.SessionToken != q.Get("X-Amz-Security-Token") {
		return "", denied("InvalidClientTokenId", "The security token included in the request is invalid.")
	}
	date, err := time.Parse(amzDateFormat, q.Get("X-Amz-Date"))
	if err != nil {
		return "", &stsError{http.StatusBadRequest, "IncompleteSignature", fmt.Sprintf("malformed X-Amz-Date %q", q.Get("X-Amz-Date"))}
	}
	if now.After(date.Add(PresignedURLExpiration)) {
		return "", denied("AccessDenied", "Request has expired")
	}
	if date.After(now.Add(PresignedURLExpiration)) {
		return "", denied("SignatureDoesNotMatch", "Signature not yet current: %s is still later than %s", date.Format(amzDateFormat), now.Add(PresignedURLExpiration).UTC().Format(amzDateFormat))
	}

	// The request as received, less its signature, signed again.
	unsigned := url.Values{}
	for k, vs := range q {
		if k != "X-Amz-Signature" {
			unsigned[k] = vs
		}
	}
	again, err := http.NewRequestWithContext(ctx, r.Method, "http://"+r.Host+r.URL.EscapedPath()+"?"+unsigned.Encode(), nil)
	if err != nil {
		return "", denied("SignatureDoesNotMatch", "%v", err)
	}
	signedHeaders := q.Get("X-Amz-SignedHeaders")
	for _, h := range strings.Split(signedHeaders, ";") {
		if h != "" && h != "host" {
			if vs := r.Header.Values(h); len(vs) > 0 {
				again.Header[http.CanonicalHeaderKey(h)] = vs
			}
		}
	}
	signedURI, _, err := v4.NewSigner().PresignHTTP(ctx, creds, again, emptySHA256, scope[3], scope[2], date)
	if err != nil {
		return "", denied("SignatureDoesNotMatch", "%v", err)
	}
	su, err := url.Parse(signedURI)
	if err != nil {
		return "", denied("SignatureDoesNotMatch", "%v", err)
	}
	want, got := su.Query().Get("X-Amz-Signature"), q.Get("X-Amz-Signature")
	if !hmac.Equal([]byte(want), []byte(got)) || su.Query().Get("X-Amz-SignedHeaders") != signedHeaders {
		return "", denied("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.")
	}
	return fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s, SignedHeaders=%s, Signature=%s", credential, signedHeaders, got), nil
}

// learn keeps the credentials in moto's answers (AssumeRole,
// GetSessionToken, CreateAccessKey, ...), so that the front can check the
// signatures made with them.
func (s *MotoSTS) learn(resp *http.Response) error {
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("reading moto's answer: %w", err)
	}
	if !bytes.Contains(body, []byte("<SecretAccessKey>")) {
		return nil
	}
	for _, c := range credentialsIn(body) {
		s.AddCredentials(c)
	}
	return nil
}

// credentialsIn returns the credentials in an XML answer: each element
// with AccessKeyId and SecretAccessKey children (and SessionToken).
func credentialsIn(body []byte) []aws.Credentials {
	var (
		out   []aws.Credentials
		stack []string
		cur   = map[int]*aws.Credentials{} // by depth of the enclosing element
		text  strings.Builder
	)
	dec := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
			text.Reset()
		case xml.CharData:
			text.Write(tok)
		case xml.EndElement:
			depth := len(stack) - 1
			if depth < 0 {
				return out
			}
			parent := depth - 1
			v := strings.TrimSpace(text.String())
			switch tok.Name.Local {
			case "AccessKeyId", "SecretAccessKey", "SessionToken":
				c := cur[parent]
				if c == nil {
					c = &aws.Credentials{}
					cur[parent] = c
				}
				switch tok.Name.Local {
				case "AccessKeyId":
					c.AccessKeyID = v
				case "SecretAccessKey":
					c.SecretAccessKey = v
				case "SessionToken":
					c.SessionToken = v
				}
			default:
				if c := cur[depth]; c != nil {
					if c.AccessKeyID != "" && c.SecretAccessKey != "" {
						out = append(out, *c)
					}
					delete(cur, depth)
				}
			}
			stack = stack[:depth]
			text.Reset()
		}
	}
}
