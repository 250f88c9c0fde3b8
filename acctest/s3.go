package acctest

import (
	"net/http"
	"net/url"
	"strings"
)

// s3BucketSubresources maps a bucket subresource query key to the noun of
// its operations: ?replication => GetBucketReplication, PutBucketReplication,
// DeleteBucketReplication.
var s3BucketSubresources = map[string]string{
	"accelerate":          "BucketAccelerateConfiguration",
	"acl":                 "BucketAcl",
	"analytics":           "BucketAnalyticsConfiguration",
	"cors":                "BucketCors",
	"encryption":          "BucketEncryption",
	"intelligent-tiering": "BucketIntelligentTieringConfiguration",
	"inventory":           "BucketInventoryConfiguration",
	"lifecycle":           "BucketLifecycleConfiguration",
	"logging":             "BucketLogging",
	"metrics":             "BucketMetricsConfiguration",
	"notification":        "BucketNotificationConfiguration",
	"object-lock":         "ObjectLockConfiguration",
	"ownershipControls":   "BucketOwnershipControls",
	"policy":              "BucketPolicy",
	"policyStatus":        "BucketPolicyStatus",
	"publicAccessBlock":   "PublicAccessBlock",
	"replication":         "BucketReplication",
	"requestPayment":      "BucketRequestPayment",
	"tagging":             "BucketTagging",
	"versioning":          "BucketVersioning",
	"website":             "BucketWebsite",
}

// s3ObjectSubresources is the same for object subresources.
var s3ObjectSubresources = map[string]string{
	"acl":        "ObjectAcl",
	"attributes": "ObjectAttributes",
	"legal-hold": "ObjectLegalHold",
	"retention":  "ObjectRetention",
	"tagging":    "ObjectTagging",
	"torrent":    "ObjectTorrent",
}

var s3Verbs = map[string]string{
	http.MethodGet:    "Get",
	http.MethodPut:    "Put",
	http.MethodDelete: "Delete",
}

// s3Action names the S3 REST operation of a path-style request from its
// method, path and query, for example PUT /bucket => CreateBucket and
// GET /bucket?location => GetBucketLocation.
func s3Action(method string, u *url.URL, h http.Header) string {
	q := u.Query()
	// The SDK names many operations itself in ?x-id=.
	if id := q.Get("x-id"); id != "" {
		return id
	}
	path := strings.TrimPrefix(u.EscapedPath(), "/")
	bucket, key, _ := strings.Cut(path, "/")
	verb := s3Verbs[method]

	if bucket == "" {
		if method == http.MethodGet {
			return "ListBuckets"
		}
		return ""
	}

	if key == "" {
		switch {
		case method == http.MethodHead:
			return "HeadBucket"
		case method == http.MethodPost && q.Has("delete"):
			return "DeleteObjects"
		case method == http.MethodGet && q.Has("location"):
			return "GetBucketLocation"
		case method == http.MethodGet && q.Has("versions"):
			return "ListObjectVersions"
		case method == http.MethodGet && q.Has("uploads"):
			return "ListMultipartUploads"
		}
		for sub, noun := range s3BucketSubresources {
			if q.Has(sub) && verb != "" {
				if method == http.MethodGet && q.Get("id") == "" && strings.HasSuffix(noun, "Configuration") &&
					(sub == "analytics" || sub == "inventory" || sub == "metrics" || sub == "intelligent-tiering") {
					return "List" + noun + "s"
				}
				return verb + noun
			}
		}
		switch method {
		case http.MethodPut:
			return "CreateBucket"
		case http.MethodDelete:
			return "DeleteBucket"
		case http.MethodGet:
			if q.Get("list-type") == "2" {
				return "ListObjectsV2"
			}
			return "ListObjects"
		}
		return ""
	}

	switch {
	case method == http.MethodHead:
		return "HeadObject"
	case method == http.MethodPost && q.Has("uploads"):
		return "CreateMultipartUpload"
	case method == http.MethodPost && q.Has("uploadId"):
		return "CompleteMultipartUpload"
	case method == http.MethodPost && q.Has("restore"):
		return "RestoreObject"
	case method == http.MethodPost && q.Has("select"):
		return "SelectObjectContent"
	case method == http.MethodPut && q.Has("partNumber") && q.Has("uploadId"):
		if h.Get("X-Amz-Copy-Source") != "" {
			return "UploadPartCopy"
		}
		return "UploadPart"
	case method == http.MethodGet && q.Has("uploadId"):
		return "ListParts"
	case method == http.MethodDelete && q.Has("uploadId"):
		return "AbortMultipartUpload"
	}
	for sub, noun := range s3ObjectSubresources {
		if q.Has(sub) && verb != "" {
			return verb + noun
		}
	}
	switch method {
	case http.MethodGet:
		return "GetObject"
	case http.MethodPut:
		if h.Get("X-Amz-Copy-Source") != "" {
			return "CopyObject"
		}
		return "PutObject"
	case http.MethodDelete:
		return "DeleteObject"
	}
	return ""
}
