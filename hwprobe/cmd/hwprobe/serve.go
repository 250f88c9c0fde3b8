package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/mlplatform/mlplatform/hwprobe/nitrotpm"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/report"
)

// attester makes an attestation document that binds nonce and userData
// to this machine: the NitroTPM, or a test signer in a test build.
type attester interface {
	Attest(ctx context.Context, nonce, userData []byte) ([]byte, error)
}

// newNitroTPM is the release attester: the machine's TPM device, or an
// error saying why there is none.
func newNitroTPM(context.Context) (attester, error) {
	a, err := nitrotpm.NewAttester()
	if err != nil {
		return nil, err
	}
	return a, nil
}

// challengePath is where the instance's challenge tag appears in the
// instance metadata.
const challengePath = "tags/instance/" + report.ChallengeTag

// maxAttestFailures is how many requests in a row may fail before the
// node stops asking its TPM and answers unattested.
const maxAttestFailures = 3

func serveCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "report serve", "--profile FILE.hcl --report FILE.json [flags]", `
Answer the validation gate's challenges with the node's report: a daemon,
meant for a systemd unit. Every --interval it reads the instance tag
`+report.ChallengeTag+` from the instance metadata service
(IMDSv2; instance tags in metadata must be enabled). When the tag holds a
challenge (64 hex characters) this process has not answered yet, it loads
the report file (the output of validate --report: nothing is validated or
benchmarked again), stamps it with the time and the challenge, and writes
it to S3 as report publish does: the same destination, region, KMS and
bucket owner rules, each report written once.

When the machine has a NitroTPM (/dev/tpmrm0 or /dev/tpm0), the report is
hardware-attested: an attestation document with the challenge as nonce and
the SHA-256 of the report's bytes as user data is written first, to the
report's key plus .nitrotpm. Without one, only the report is written and
the reason is logged once ("not hardware-attested: ...").

A tag that is not 64 hex characters is ignored (logged). A failed write is
logged and tried again at the next interval; when another report holds
the key of this second (the boot report), the answer goes under a later
one. --to should name a prefix: an exact .json key can
answer only one challenge. SIGTERM or SIGINT stop the daemon (exit 0).

The AWS configuration is the standard one, as for report publish;
AWS_EC2_METADATA_SERVICE_ENDPOINT overrides the metadata endpoint.

Exit codes: 0 stopped by a signal, or with --once the challenge answered;
2 it could not run, or with --once there was no challenge to answer.`,
		"hwprobe report serve --profile /etc/hwprobe/profile.hcl --report /var/lib/hwprobe/report.json")
	profilePath := fset.String("profile", "", "profile `file` (HCL): gives the region and the default destination (required)")
	from := fset.String("report", "", "report `file` (from validate --report) to answer with (required)")
	to := fset.String("to", "", "destination `s3://bucket/prefix/` (default: the profile's report.s3_uri)")
	kmsKey := fset.String("kms-key", "", "KMS key `id`, alias or ARN in the profile's region (default: the profile's report.kms_key_id, else aws/s3)")
	interval := fset.Duration("interval", 5*time.Second, "how often to read the challenge tag")
	once := fset.Bool("once", false, "answer the current challenge and exit (exit 2 when there is none)")
	if done, err := parse(a, fset, args); done {
		return err
	}
	switch {
	case *profilePath == "":
		return cannotRun(errors.New("report serve: --profile is required"))
	case *from == "":
		return cannotRun(errors.New("report serve: --report is required"))
	case *interval <= 0:
		return cannotRun(fmt.Errorf("report serve: --interval must be positive, not %s", *interval))
	}
	p, _, err := loadProfile(*profilePath)
	if err != nil {
		return err
	}
	t, err := reportTarget("report serve", p, *to, *kmsKey)
	if err != nil {
		return err
	}
	rep, err := readReport("report serve", *from)
	if err != nil {
		return err
	}
	if err := bindNode("report serve", &t, rep); err != nil {
		return err
	}
	client, err := a.reportS3(ctx, t.Region)
	if err != nil {
		return cannotRun(err)
	}
	s := &server{a: a, imds: a.newIMDS(), s3: client, target: t, from: *from}
	if att, err := a.newAttester(ctx); err != nil {
		s.unattested(err)
	} else {
		s.att = att
	}
	if *once {
		return s.answerOnce(ctx)
	}
	return s.serve(ctx, *interval)
}

// server answers challenges; one per process.
type server struct {
	a      *app
	imds   probe.IMDS
	s3     report.S3
	target report.Target
	from   string

	att      attester // nil: not hardware-attested
	failures int      // attestation requests failed in a row
	answered string   // the last challenge answered
	said     string   // the last state logged, not repeated
}

// logf writes a line to stderr.
func (s *server) logf(format string, args ...any) {
	fmt.Fprintf(s.a.stderr, "hwprobe: report serve: "+format+"\n", args...)
}

// note logs a state once, until another state is noted.
func (s *server) note(msg string) {
	if msg != s.said {
		s.said = msg
		s.logf("%s", msg)
	}
}

// unattested stops attesting for the rest of the process.
func (s *server) unattested(why error) {
	s.att = nil
	s.logf("not hardware-attested: %v", why)
}

func (s *server) serve(ctx context.Context, interval time.Duration) error {
	s.logf("answering the challenges of instance tag %s every %s", report.ChallengeTag, interval)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		s.step(ctx)
		select {
		case <-ctx.Done():
			s.logf("stopping: %v", context.Cause(ctx))
			return nil
		case <-tick.C:
		}
	}
}

// step answers the tag's challenge when it is new.
func (s *server) step(ctx context.Context) {
	challenge, nonce, err := s.challenge(ctx)
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		s.note(err.Error())
		return
	case challenge == s.answered:
		return
	}
	s.said = ""
	uri, err := s.answer(ctx, challenge, nonce)
	switch {
	case err == nil:
		s.answered = challenge
		s.logf("answered challenge %s: %s", challenge, uri)
		fmt.Fprintln(s.a.stdout, uri)
	case errors.Is(err, report.ErrReportExists):
		// Another report holds this second's key (the boot report, written
		// the same second): the answer goes under the next interval's.
		s.logf("answering challenge %s: %v (trying again at the next interval, under a later key)", challenge, err)
	case ctx.Err() == nil:
		s.logf("answering challenge %s: %v (trying again at the next interval)", challenge, err)
	}
}

func (s *server) answerOnce(ctx context.Context) error {
	challenge, nonce, err := s.challenge(ctx)
	if err != nil {
		return cannotRun(fmt.Errorf("report serve --once: no challenge to answer: %w", err))
	}
	uri, err := s.answer(ctx, challenge, nonce)
	for try := 1; errors.Is(err, report.ErrReportExists) && try < 3; try++ {
		// Another report holds this second's key (the boot report, written
		// the same second): answer under the next second's.
		s.logf("answering challenge %s: %v (trying again under a later key)", challenge, err)
		select {
		case <-ctx.Done():
			return cannotRun(ctx.Err())
		case <-time.After(time.Until(s.a.now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond))):
		}
		uri, err = s.answer(ctx, challenge, nonce)
	}
	if err != nil {
		return cannotRun(fmt.Errorf("report serve --once: challenge %s: %w", challenge, err))
	}
	fmt.Fprintln(s.a.stdout, uri)
	return nil
}

// errNoChallenge means the tag is not set.
var errNoChallenge = errors.New("no challenge: instance tag " + report.ChallengeTag + " is not set")

// challenge reads and checks the tag's challenge.
func (s *server) challenge(ctx context.Context) (string, []byte, error) {
	v, err := imdsText(ctx, s.imds, challengePath)
	if err != nil {
		return "", nil, err
	}
	c, nonce, err := report.ParseChallenge(v)
	if err != nil {
		return "", nil, fmt.Errorf("instance tag %s ignored: %w", report.ChallengeTag, err)
	}
	return c, nonce, nil
}

// answer publishes the report file stamped with the challenge, attested
// when an attester is there.
func (s *server) answer(ctx context.Context, challenge string, nonce []byte) (string, error) {
	rep, err := readReport("report serve", s.from)
	if err != nil {
		return "", err
	}
	t := s.target
	if err := bindNode("report serve", &t, rep); err != nil {
		return "", err
	}
	rep.GeneratedAt = s.a.now().UTC().Truncate(time.Second)
	rep.Challenge = challenge
	body, err := report.Encode(rep)
	if err != nil {
		return "", err
	}
	var doc []byte
	if s.att != nil {
		sum := sha256.Sum256(body)
		doc, err = s.att.Attest(ctx, nonce, sum[:])
		switch {
		case err == nil:
			s.failures = 0
		case ctx.Err() != nil:
			return "", err
		case errors.Is(err, nitrotpm.ErrRefused):
			s.unattested(err)
		default:
			if s.failures++; s.failures < maxAttestFailures {
				return "", fmt.Errorf("attestation: %w", err)
			}
			s.unattested(fmt.Errorf("%d attestation requests failed in a row, the last: %w", s.failures, err))
		}
	}
	return report.PublishBody(ctx, s.s3, t, rep, body, doc)
}

// imdsText reads a metadata path; a path the service does not have is
// errNoChallenge's kind of answer for the tag: not there.
func imdsText(ctx context.Context, c probe.IMDS, path string) (string, error) {
	out, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
			if path == challengePath {
				return "", errNoChallenge
			}
			return "", fmt.Errorf("instance metadata %s: not found", path)
		}
		return "", fmt.Errorf("instance metadata %s: %w", path, err)
	}
	defer out.Content.Close()
	b, err := io.ReadAll(io.LimitReader(out.Content, 4<<10))
	if err != nil {
		return "", fmt.Errorf("instance metadata %s: %w", path, err)
	}
	return string(b), nil
}
