package cloud

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// MaxReportBytes bounds one report read: hwprobe's reports are a few tens
// of KiB.
const MaxReportBytes = 1 << 20

// ReportsAPI is the part of the S3 client the validation gate uses.
type ReportsAPI interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// ReportKey is one object under a reports prefix.
type ReportKey struct {
	Key          string // full object key
	Rel          string // the key below the prefix: INSTANCE-ID/TIME.json
	ETag         string
	LastModified time.Time
	Size         int64
}

// splitPrefix splits s3://bucket/prefix/ into the bucket and a prefix that
// ends in "/" (or is empty).
func splitPrefix(uri string) (bucket, prefix string, err error) {
	loc, err := residency.ParseS3URI(uri)
	if err != nil {
		return "", "", err
	}
	prefix = loc.Key
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return loc.Bucket, prefix, nil
}

// ReportListing bounds a listing of reports.
type ReportListing struct {
	// StartAfter is a key below the prefix (INSTANCE-ID/TIME): keys up to
	// it are left out (S3 lists keys in order).
	StartAfter string
	// Max bounds the keys listed, .json or not: more is a
	// *TooManyReportsError, found without listing the rest. 0: no bound.
	Max int
	// Owner is the account the bucket must belong to (ExpectedBucketOwner);
	// "" checks none.
	Owner string
}

// TooManyReportsError is a prefix holding more objects than a listing
// reads.
type TooManyReportsError struct {
	URI string
	Max int
}

func (e *TooManyReportsError) Error() string {
	return fmt.Sprintf("more than %d objects under %s: the validation gate reads at most %d there (a node writes one report a boot); remove what is not a report of this node", e.Max, e.URI, e.Max)
}

// ReportAttestationSuffix names a report's attestation document, listed
// beside it: TIME.json.nitrotpm.
const ReportAttestationSuffix = ".nitrotpm"

// ListReports lists the .json objects under the prefix URI
// (s3://bucket/prefix/), every page up to the listing's bound.
func ListReports(ctx context.Context, api ReportsAPI, uri string, l ReportListing) ([]ReportKey, error) {
	bucket, prefix, err := splitPrefix(uri)
	if err != nil {
		return nil, fmt.Errorf("listing reports: %w", err)
	}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)}
	if l.StartAfter != "" {
		in.StartAfter = aws.String(prefix + l.StartAfter)
	}
	if l.Owner != "" {
		in.ExpectedBucketOwner = aws.String(l.Owner)
	}
	if l.Max > 0 && l.Max < 1000 {
		in.MaxKeys = aws.Int32(int32(l.Max + 1))
	}
	var out []ReportKey
	listed := 0
	p := s3.NewListObjectsV2Paginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing reports under %s: %w", uri, err)
		}
		for _, o := range page.Contents {
			if listed++; l.Max > 0 && listed > l.Max {
				return nil, &TooManyReportsError{URI: "s3://" + bucket + "/" + prefix, Max: l.Max}
			}
			k := aws.ToString(o.Key)
			if !strings.HasSuffix(k, ".json") && !strings.HasSuffix(k, ".json"+ReportAttestationSuffix) {
				continue
			}
			out = append(out, ReportKey{Key: k, Rel: strings.TrimPrefix(k, prefix), ETag: aws.ToString(o.ETag),
				LastModified: aws.ToTime(o.LastModified), Size: aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}

// ListReportNodes lists the node prefixes (INSTANCE-ID/) under the prefix
// URI, at most max (more is a *TooManyReportsError).
func ListReportNodes(ctx context.Context, api ReportsAPI, uri string, max int, owner string) ([]string, error) {
	bucket, prefix, err := splitPrefix(uri)
	if err != nil {
		return nil, fmt.Errorf("listing reports: %w", err)
	}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/")}
	if owner != "" {
		in.ExpectedBucketOwner = aws.String(owner)
	}
	var out []string
	p := s3.NewListObjectsV2Paginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing reports under %s: %w", uri, err)
		}
		for _, cp := range page.CommonPrefixes {
			if len(out) == max {
				return nil, &TooManyReportsError{URI: "s3://" + bucket + "/" + prefix, Max: max}
			}
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), prefix), "/"))
		}
	}
	return out, nil
}

// GetReport reads one report object of the prefix URI's bucket; owner, when
// set, is the account the bucket must belong to.
func GetReport(ctx context.Context, api ReportsAPI, uri, key, owner string) ([]byte, error) {
	bucket, _, err := splitPrefix(uri)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	// The body is read after the call returns: the call's own deadline
	// (which ends with the call) is replaced by one over call and read.
	ctx, cancel := context.WithTimeout(ctx, DefaultLimits().OperationTimeout)
	defer cancel()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if owner != "" {
		in.ExpectedBucketOwner = aws.String(owner)
	}
	out, err := api.GetObject(ctx, in, withoutCallDeadline)
	if err != nil {
		return nil, fmt.Errorf("reading report s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, MaxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading report s3://%s/%s: %w", bucket, key, err)
	}
	if len(b) > MaxReportBytes {
		return nil, fmt.Errorf("report s3://%s/%s is larger than %d bytes", bucket, key, MaxReportBytes)
	}
	return b, nil
}

// callDeadlineID names boundedCalls' middleware (clients.go).
const callDeadlineID = "mlplatformCallDeadline"

// withoutCallDeadline removes the per-call deadline of boundedCalls from
// one call, for a call whose response body is read after it returns.
func withoutCallDeadline(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		if _, ok := s.Initialize.Get(callDeadlineID); !ok {
			return nil // not installed
		}
		_, err := s.Initialize.Remove(callDeadlineID)
		return err
	})
}

// ConsoleAPI is the part of the EC2 client that reads console output.
type ConsoleAPI interface {
	GetConsoleOutput(ctx context.Context, in *ec2.GetConsoleOutputInput, optFns ...func(*ec2.Options)) (*ec2.GetConsoleOutputOutput, error)
}

// ConsoleTail is the last lines of an instance's console output (EC2
// keeps the latest 64 KiB), "" when there is none yet.
func ConsoleTail(ctx context.Context, api ConsoleAPI, instanceID string, lines int) (string, error) {
	out, err := api.GetConsoleOutput(ctx, &ec2.GetConsoleOutputInput{InstanceId: aws.String(instanceID), Latest: aws.Bool(true)})
	if err != nil {
		return "", fmt.Errorf("reading console output of %s: %w", instanceID, err)
	}
	raw := aws.ToString(out.Output)
	if raw == "" {
		return "", nil
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		b = []byte(raw) // some endpoints answer in clear
	}
	ls := strings.Split(strings.TrimRight(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), "\n")
	if lines > 0 && len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n"), nil
}

// CallerAPI is the part of the STS client that names the account.
type CallerAPI interface {
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// CallerAccount is the account id of the credentials in use.
func CallerAccount(ctx context.Context, api CallerAPI) (string, error) {
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("reading the caller's account: %w", err)
	}
	return aws.ToString(out.Account), nil
}
