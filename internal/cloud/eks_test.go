package cloud

import (
	"context"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// TestEKSToken: the token is what `aws eks get-token` prints: the prefix,
// then the unpadded base64url of a presigned STS GetCallerIdentity GET
// whose signature covers the cluster's name header, valid 60 s. Signing
// is local: no call is made.
func TestEKSToken(t *testing.T) {
	c := NewSTSClient(sts.New(sts.Options{Region: "me-central-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session"),
		BaseEndpoint: aws.String("https://sts.me-central-1.amazonaws.com")}))
	tok, err := EKSToken(context.Background(), c, "ml-prod")
	if err != nil {
		t.Fatal(err)
	}
	rest, ok := strings.CutPrefix(tok, "k8s-aws-v1.")
	if !ok || strings.ContainsAny(rest, "=+/") {
		t.Fatalf("token %q: want k8s-aws-v1. and unpadded base64url", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Host != "sts.me-central-1.amazonaws.com" || q.Get("Action") != "GetCallerIdentity" || q.Get("X-Amz-Expires") != "60" ||
		!strings.Contains(q.Get("X-Amz-SignedHeaders"), "x-k8s-aws-id") || q.Get("X-Amz-Signature") == "" ||
		!strings.HasPrefix(q.Get("X-Amz-Credential"), "AKIDEXAMPLE/") || !strings.Contains(q.Get("X-Amz-Credential"), "/me-central-1/sts/") ||
		q.Get("X-Amz-Security-Token") != "session" {
		t.Errorf("presigned URL %s", u)
	}
	other, err := EKSToken(context.Background(), c, "other")
	if err != nil || other == tok {
		t.Errorf("another cluster's token is the same (%v)", err)
	}
}
