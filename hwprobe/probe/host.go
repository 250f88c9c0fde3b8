package probe

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

	"github.com/mlplatform/mlplatform/hwprobe/identity"
)

// Host is the EC2 identity of the node. OnEC2 is false, with a Reason, when
// the instance metadata service did not answer quickly.
type Host struct {
	OnEC2            bool      `json:"on_ec2"`
	Reason           string    `json:"reason,omitempty"`
	Region           string    `json:"region,omitempty"`
	AvailabilityZone string    `json:"availability_zone,omitempty"`
	ZoneID           string    `json:"zone_id,omitempty"`
	InstanceType     string    `json:"instance_type,omitempty"`
	InstanceID       string    `json:"instance_id,omitempty"`
	AccountID        string    `json:"account_id,omitempty"`
	ImageID          string    `json:"image_id,omitempty"`
	Architecture     string    `json:"architecture,omitempty"`
	Identity         *Identity `json:"identity,omitempty"`
}

// Identity is the signed instance identity document as IMDS served it,
// kept verbatim so a reader of the report can verify it again.
type Identity struct {
	Document  string `json:"document"`
	Signature string `json:"rsa2048"` // base64 PKCS#7 from instance-identity/rsa2048
	Verified  bool   `json:"verified"`
	Signer    string `json:"signer,omitempty"`
	// VerifyError says why Verified is false.
	VerifyError string `json:"verify_error,omitempty"`
}

// IMDS is the part of the EC2 instance metadata client hwprobe uses.
type IMDS interface {
	GetMetadata(ctx context.Context, in *imds.GetMetadataInput, optFns ...func(*imds.Options)) (*imds.GetMetadataOutput, error)
	GetDynamicData(ctx context.Context, in *imds.GetDynamicDataInput, optFns ...func(*imds.Options)) (*imds.GetDynamicDataOutput, error)
}

// IMDS timing: off EC2 the link-local address usually does not answer at
// all, so the first request must give up fast.
const (
	imdsConnectTimeout = 200 * time.Millisecond
	imdsFirstTimeout   = 300 * time.Millisecond
	imdsTotalTimeout   = 3 * time.Second
)

// NewIMDSClient returns an IMDSv2-only client with short timeouts and no
// retries. AWS_EC2_METADATA_SERVICE_ENDPOINT overrides the endpoint and
// AWS_EC2_METADATA_DISABLED=true disables it.
func NewIMDSClient() *imds.Client {
	transport := &http.Transport{
		Proxy:       nil, // the metadata service is never behind a proxy
		DialContext: (&net.Dialer{Timeout: imdsConnectTimeout}).DialContext,
	}
	return imds.New(imds.Options{
		HTTPClient:     &http.Client{Transport: transport, Timeout: imdsTotalTimeout},
		Retryer:        aws.NopRetryer{},
		EnableFallback: aws.FalseTernary,
	})
}

func collectHost(ctx context.Context, c IMDS, trusted []*x509.Certificate) (Host, error) {
	first, cancel := context.WithTimeout(ctx, imdsFirstTimeout)
	instanceID, err := metadata(first, c, "instance-id")
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return Host{Reason: "not probed: " + ctx.Err().Error()}, ctx.Err()
		}
		return Host{Reason: "not on EC2: instance metadata unreachable (" + shortErr(err) + ")"}, nil
	}
	ctx, cancel = context.WithTimeout(ctx, imdsTotalTimeout)
	defer cancel()

	h := Host{OnEC2: true, InstanceID: instanceID}
	var errs []error
	if h.ZoneID, err = metadata(ctx, c, "placement/availability-zone-id"); err != nil {
		errs = append(errs, err)
	}
	doc, err := dynamic(ctx, c, "instance-identity/document")
	if err != nil {
		return h, errors.Join(append(errs, err)...)
	}
	d, err := identity.ParseDocument([]byte(doc))
	if err != nil {
		return h, errors.Join(append(errs, err)...)
	}
	h.Region, h.AvailabilityZone, h.InstanceType = d.Region, d.AvailabilityZone, d.InstanceType
	h.AccountID, h.ImageID, h.Architecture = d.AccountID, d.ImageID, d.Architecture
	if d.InstanceID != instanceID {
		errs = append(errs, fmt.Errorf("identity document instance %s differs from metadata %s", d.InstanceID, instanceID))
	}
	h.Identity = &Identity{Document: doc}
	sig, err := dynamic(ctx, c, "instance-identity/rsa2048")
	if err != nil {
		h.Identity.VerifyError = "no rsa2048 signature: " + shortErr(err)
		return h, errors.Join(errs...)
	}
	h.Identity.Signature = strings.TrimSpace(sig)
	signer, err := identity.Verify([]byte(doc), []byte(sig), trusted)
	if err != nil {
		h.Identity.VerifyError = err.Error()
	} else {
		h.Identity.Verified, h.Identity.Signer = true, signer
	}
	return h, errors.Join(errs...)
}

func metadata(ctx context.Context, c IMDS, p string) (string, error) {
	out, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: p})
	if err != nil {
		return "", fmt.Errorf("imds %s: %w", p, err)
	}
	return readAll(out.Content, p)
}

func dynamic(ctx context.Context, c IMDS, p string) (string, error) {
	out, err := c.GetDynamicData(ctx, &imds.GetDynamicDataInput{Path: p})
	if err != nil {
		return "", fmt.Errorf("imds %s: %w", p, err)
	}
	return readAll(out.Content, p)
}

func readAll(rc io.ReadCloser, p string) (string, error) {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 64<<10))
	if err != nil {
		return "", fmt.Errorf("imds %s: %w", p, err)
	}
	return string(b), nil
}

// shortErr keeps the last, most specific part of an SDK error chain.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}
