package acctest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The node player's side of the validation gate's challenges: each gate
// tags the nodes it judges with a challenge (platform.ChallengeTag); a
// played node reads it from its metadata double and answers with hwprobe's
// own `report serve --once`, the command its challenge service runs in a
// loop, attested by the node's test NitroTPM when it has one.

// playedNode is what the player keeps of a node it played, to answer its
// challenges.
type playedNode struct {
	n               cloud.GPUNode
	b               NodeBehaviour
	imds            *fakeIMDS
	run             func(ctx context.Context, args ...string) (string, int, error)
	profile, report string
	// bucket and prefix are the node's reports destination (the
	// profile's report target, ending in "/").
	bucket, prefix string
	answered       string // the last challenge answered
	// first is the node's first answer (Replay).
	first *storedAnswer
	// leftFor is the leave request the node left Slurm for.
	leftFor string
}

// storedAnswer is an answer as stored: its report and attestation.
type storedAnswer struct {
	bucket, key       string
	body, attestation []byte
}

// answer answers the node's challenge (its instance tag) when it is new.
func (p *NodePlayer) answer(ctx context.Context, clients *cloud.Clients, n cloud.GPUNode) error {
	p.mu.Lock()
	pn := p.nodes[n.InstanceID]
	p.mu.Unlock()
	ch := n.Tags[platform.ChallengeTag]
	if pn == nil || ch == "" || ch == pn.answered {
		return nil
	}
	if err := p.answerChallenge(ctx, clients, n, pn, ch); err != nil {
		return err // tried again at the next look
	}
	pn.answered = ch
	return nil
}

// answerChallenge answers challenge ch as the node's behaviour says.
func (p *NodePlayer) answerChallenge(ctx context.Context, clients *cloud.Clients, n cloud.GPUNode, pn *playedNode, ch string) error {
	switch {
	case pn.b.NoAnswer:
		p.Logf("node player: node %d (%s) does not answer challenge %s", n.Index, n.InstanceID, short(ch))
		return nil
	case pn.b.Replay && pn.first != nil:
		return p.replay(ctx, clients, pn)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // bounded: tried again at the next look
	defer cancel()
	pn.imds.SetTag(platform.ChallengeTag, ch)
	args := []string{"report", "serve", "--once", "--profile", pn.profile, "--report", pn.report}
	if pn.b.ForgeAnswer != nil {
		args = append(args, "--to", "s3://"+pn.bucket+"/"+forgerStaging)
	}
	out, code, err := pn.run(ctx, args...)
	if err != nil || code != 0 {
		return fmt.Errorf("hwprobe report serve --once exit %d: %v\n%s", code, err, out)
	}
	uri := lastS3URI(out)
	p.Logf("node player: node %d (%s) answered challenge %s: %s\n%s", n.Index, n.InstanceID, short(ch), uri, out)
	if uri == "" {
		return fmt.Errorf("hwprobe report serve --once wrote no report:\n%s", out)
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(uri, "s3://"), "/")
	if pn.b.Replay && pn.first == nil {
		a := &storedAnswer{bucket: bucket, key: key}
		if a.body, err = getObject(ctx, clients, bucket, key); err != nil {
			return err
		}
		a.attestation, _ = getObject(ctx, clients, bucket, key+platform.AttestationSuffix) // absent without a NitroTPM
		pn.first = a
	}
	if pn.b.ForgeAnswer != nil {
		return p.forge(ctx, clients, pn, uri)
	}
	return nil
}

// forgerStaging is where a node whose reports are forged writes them: the
// forger wins every race, and only its rewrites reach the node's prefix,
// beside the node's genuine attestations.
const forgerStaging = "forger-staging/"

// forge stores the forger's rewrite of the report at uri (under
// forgerStaging) at the node's own key, its attestation beside it as the
// node made it.
func (p *NodePlayer) forge(ctx context.Context, clients *cloud.Clients, pn *playedNode, uri string) error {
	// Bounded: a call that hangs on a loaded emulator fails, and the
	// answer is forged again at the next look.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(uri, "s3://"), "/")
	if uri == "" || bucket != pn.bucket || !strings.HasPrefix(key, forgerStaging) {
		return fmt.Errorf("forging: %q is not a staged report", uri)
	}
	body, err := getObject(ctx, clients, bucket, key)
	if err != nil {
		return err
	}
	att, _ := getObject(ctx, clients, bucket, key+platform.AttestationSuffix) // absent when not attested
	if body, err = pn.b.ForgeAnswer(body); err != nil {
		return err
	}
	dest := pn.prefix + strings.TrimPrefix(key, forgerStaging)
	if att != nil {
		if _, err := clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(dest + platform.AttestationSuffix), Body: bytes.NewReader(att)}); err != nil {
			return fmt.Errorf("forging: %w", err)
		}
	}
	if _, err := clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(dest), Body: bytes.NewReader(body)}); err != nil {
		return fmt.Errorf("forging: %w", err)
	}
	p.Logf("node player: node %d (%s): a writer of the prefix stored a rewrite of its report as s3://%s/%s", pn.n.Index, pn.n.InstanceID, bucket, dest)
	return nil
}

// lastS3URI is the last line of out that is an s3:// URI (what hwprobe
// prints for a report written), or "".
func lastS3URI(out string) string {
	var uri string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "s3://") {
			uri = strings.TrimSpace(line)
		}
	}
	return uri
}

// replay stores the node's first answer again, under a key of now, its
// generated_at edited to match the key (so that only its challenge tells
// it is not this apply's), with its attestation beside it.
func (p *NodePlayer) replay(ctx context.Context, clients *cloud.Clients, pn *playedNode) error {
	a := pn.first
	var r map[string]any
	if err := json.Unmarshal(a.body, &r); err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Second)
	r["generated_at"] = now
	body, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	dir := a.key[:strings.LastIndex(a.key, "/")+1]
	key := dir + now.Format(platform.ReportKeyTime) + ".json"
	if a.attestation != nil {
		if _, err := clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(a.bucket), Key: aws.String(key + platform.AttestationSuffix), Body: bytes.NewReader(a.attestation)}); err != nil {
			return err
		}
	}
	if _, err := clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(a.bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		return err
	}
	p.Logf("node player: node %d (%s): its first answer replayed as s3://%s/%s", pn.n.Index, pn.n.InstanceID, a.bucket, key)
	return nil
}

func getObject(ctx context.Context, clients *cloud.Clients, bucket, key string) ([]byte, error) {
	out, err := clients.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	return io.ReadAll(io.LimitReader(out.Body, 4<<20))
}

// closeNodes stops the played nodes' metadata doubles.
func (p *NodePlayer) closeNodes() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pn := range p.nodes {
		pn.imds.Close()
	}
	clear(p.nodes)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// NitroSigner is a test Nitro PKI that plays a node's NitroTPM (a
// NodePlayer's Nitro, a NodeBehaviour's Nitro).
type NitroSigner = attesttest.Signer

// NewNitroSigner makes a test Nitro PKI of its own: a root no other
// signer's configuration trusts.
func NewNitroSigner() (*NitroSigner, error) { return attesttest.New(attesttest.Options{}) }

// MarkImageNitroTPM has the emulator describe image (an AMI id or an SSM
// parameter that holds one) with NitroTPM support (the shim's image
// double, ImageTPMSupportTag).
func (h *Harness) MarkImageNitroTPM(ctx context.Context, image string) error {
	c, err := h.Clients(ctx, Region)
	if err != nil {
		return err
	}
	im, err := cloud.ResolveImage(ctx, c.EC2, c.SSM, image)
	if err != nil {
		return err
	}
	_, err = EC2(c).CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{im.ID},
		Tags: []ec2types.Tag{{Key: aws.String(ImageTPMSupportTag), Value: aws.String("v2.0")}}})
	return err
}

// ForgeToPass rewrites a failing report to pass, as a writer of the
// reports prefix without the node's hardware would (a NodeBehaviour's
// ForgeAnswer): every failed check passes, and the exit code is 0.
func ForgeToPass(b []byte) ([]byte, error) {
	s := strings.ReplaceAll(string(b), `"status": "fail"`, `"status": "pass"`)
	s = strings.ReplaceAll(s, `"exit_code": 1`, `"exit_code": 0`)
	if s == string(b) {
		return nil, fmt.Errorf("nothing to forge: the report has no failed check")
	}
	return []byte(s), nil
}
