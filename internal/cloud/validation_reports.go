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
const MaxReportBytes = 4 << 20

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

// ListReports lists the .json objects under the prefix URI
// (s3://bucket/prefix/), every page.
func ListReports(ctx context.Context, api ReportsAPI, uri string) ([]ReportKey, error) {
	bucket, prefix, err := splitPrefix(uri)
	if err != nil {
		return nil, fmt.Errorf("listing reports: %w", err)
	}
	var out []ReportKey
	p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing reports under %s: %w", uri, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if !strings.HasSuffix(k, ".json") {
				continue
			}
			out = append(out, ReportKey{Key: k, Rel: strings.TrimPrefix(k, prefix), ETag: aws.ToString(o.ETag),
				LastModified: aws.ToTime(o.LastModified), Size: aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}

// GetReport reads one report object of the prefix URI's bucket.
func GetReport(ctx context.Context, api ReportsAPI, uri, key string) ([]byte, error) {
	bucket, _, err := splitPrefix(uri)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	// The body is read after the call returns: the call's own deadline
	// (which ends with the call) is replaced by one over call and read.
	ctx, cancel := context.WithTimeout(ctx, DefaultLimits().OperationTimeout)
	defer cancel()
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}, withoutCallDeadline)
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
