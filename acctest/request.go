package acctest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// Protocol is the AWS wire protocol of a request; it decides how a response
// or an error is encoded.
type Protocol string

// The protocols the shim tells apart.
const (
	ProtocolEC2Query Protocol = "ec2"      // EC2: form request, XML response
	ProtocolQuery    Protocol = "query"    // STS, IAM, Auto Scaling: form request, XML response
	ProtocolJSON     Protocol = "json"     // SageMaker, KMS, SSM: X-Amz-Target, JSON 1.0/1.1
	ProtocolRESTXML  Protocol = "rest-xml" // S3
	ProtocolRESTJSON Protocol = "rest-json"
	ProtocolUnknown  Protocol = ""
)

// Request is an AWS API request as the shim understood it. Handlers get one.
type Request struct {
	Service  string // from the SigV4 credential scope: ec2, s3, sagemaker, ...
	Action   string // operation name: RunInstances, CreateFeatureGroup, GetBucketLocation, ...
	Region   string // from the SigV4 credential scope
	Protocol Protocol
	// Form holds the form body of query protocols (EC2, STS) merged with the
	// URL query; for REST protocols it is the URL query.
	Form url.Values
	// Body is the raw request body (JSON for JSON protocols).
	Body []byte
	// Fixture is true for calls made by the harness's fixture clients
	// (Harness.Clients); they are left out of Shim.Writes.
	Fixture bool
	// HTTP is the original request; its Body has been read and restored.
	HTTP *http.Request

	shim *Shim
}

// DecodeJSON decodes the JSON body into v.
func (r *Request) DecodeJSON(v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("decoding %s %s request: %w", r.Service, r.Action, err)
	}
	return nil
}

// Forward sends the request to moto with body in place of the original one
// (nil keeps it) and returns moto's response; the caller closes its body.
// A handler can use it to adapt a request moto rejects, or a response.
func (r *Request) Forward(body []byte) (*http.Response, error) {
	if body == nil {
		body = r.Body
	}
	out := r.HTTP.Clone(r.HTTP.Context())
	out.RequestURI = ""
	out.URL.Scheme = r.shim.upstream.Scheme
	out.URL.Host = r.shim.upstream.Host
	out.Body = readCloser(body)
	out.ContentLength = int64(len(body))
	out.Header.Del("Content-Length")
	out.TransferEncoding = nil
	resp, err := r.shim.client.Do(out)
	if err != nil {
		return nil, fmt.Errorf("forwarding %s %s: %w", r.Service, r.Action, err)
	}
	return resp, nil
}

// parseRequest identifies service, region, protocol and action of an AWS
// request. body is the request body, already read.
func parseRequest(hr *http.Request, body []byte) *Request {
	r := &Request{HTTP: hr, Body: body, Form: url.Values{}}
	r.Service, r.Region = credentialScope(hr)
	r.Fixture = strings.Contains(hr.Header.Get("User-Agent"), "app/"+fixtureAppID)
	for k, v := range hr.URL.Query() {
		r.Form[k] = append(r.Form[k], v...)
	}

	target := hr.Header.Get("X-Amz-Target")
	ct, _, _ := mime.ParseMediaType(hr.Header.Get("Content-Type"))
	switch {
	case target != "":
		r.Protocol = ProtocolJSON
		r.Action = target[strings.LastIndexByte(target, '.')+1:]
	case r.Service == "s3":
		r.Protocol = ProtocolRESTXML
		r.Action = s3Action(hr.Method, hr.URL, hr.Header)
	case r.Service == "eks":
		r.Protocol = ProtocolRESTJSON
		r.Action = eksAction(hr.Method, hr.URL)
	case ct == "application/x-www-form-urlencoded":
		if form, err := url.ParseQuery(string(body)); err == nil {
			for k, v := range form {
				r.Form[k] = append(r.Form[k], v...)
			}
		}
		r.Action = r.Form.Get("Action")
		r.Protocol = ProtocolQuery
		if r.Service == "ec2" {
			r.Protocol = ProtocolEC2Query
		}
	case r.Form.Get("Action") != "":
		r.Action = r.Form.Get("Action")
		r.Protocol = ProtocolQuery
		if r.Service == "ec2" {
			r.Protocol = ProtocolEC2Query
		}
	default:
		// Smithy RPC v2 (CBOR) names the operation in the path:
		// /service/{Service}/operation/{Operation}.
		if i := strings.Index(hr.URL.Path, "/operation/"); i >= 0 && strings.HasPrefix(hr.URL.Path, "/service/") {
			r.Action = hr.URL.Path[i+len("/operation/"):]
		}
		if r.Service != "" {
			r.Protocol = ProtocolRESTJSON
		}
	}
	return r
}

// credentialScope returns service and region from a SigV4 Authorization
// header (Credential=AKID/DATE/REGION/SERVICE/aws4_request) or from a
// presigned URL's X-Amz-Credential.
func credentialScope(hr *http.Request) (service, region string) {
	cred := ""
	if auth := hr.Header.Get("Authorization"); auth != "" {
		if i := strings.Index(auth, "Credential="); i >= 0 {
			cred = auth[i+len("Credential="):]
			if j := strings.IndexAny(cred, ", "); j >= 0 {
				cred = cred[:j]
			}
		}
	} else {
		cred = hr.URL.Query().Get("X-Amz-Credential")
	}
	parts := strings.Split(cred, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" {
		return "", ""
	}
	return parts[3], parts[2]
}

// writePrefixes are the operation verbs that change something.
var writePrefixes = []string{
	"Create", "Put", "Delete", "Update", "Run", "Terminate", "Modify",
	"Attach", "Detach", "Associate", "Disassociate", "Tag", "Untag",
	"Start", "Stop", "Reboot", "Register", "Deregister", "Allocate", "Release",
	"Import", "Authorize", "Revoke", "Enable", "Disable", "Cancel", "Copy",
	"Add", "Remove", "Replace", "Restore", "Upload", "Complete", "Abort",
}

// IsWrite reports whether a call changes state: S3 PUT, POST and DELETE, and
// for every service an action whose verb is one of Create, Put, Delete,
// Update, Run, Terminate, Modify, Attach, Associate, Tag, Start, Stop, Reboot,
// Register, Allocate, Release, Import, Authorize, Revoke, Enable, Disable,
// Cancel, Copy (and their opposites such as Detach or Untag).
func IsWrite(service, action, method string) bool {
	if service == "s3" {
		switch method {
		case http.MethodPut, http.MethodPost, http.MethodDelete:
			return true
		}
		return false
	}
	for _, p := range writePrefixes {
		if rest, ok := strings.CutPrefix(action, p); ok && (rest == "" || rest[0] >= 'A' && rest[0] <= 'Z') {
			return true
		}
	}
	return false
}

func readCloser(b []byte) *nopCloser { return &nopCloser{bytes.NewReader(b)} }

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
