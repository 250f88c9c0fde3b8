package acctest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The EC2 image NitroTPM double: moto keeps no TpmSupport for an image (it
// ignores RegisterImage's TpmSupport and DescribeImages never returns it),
// so the shim adds it. A test declares an image NitroTPM-capable by
// tagging it ImageTPMSupportTag = "v2.0"; DescribeImages then answers
// <tpmSupport>v2.0</tpmSupport> for it, as EC2 does for an image
// registered with --tpm-support v2.0. It is test code.

// ImageTPMSupportTag is the tag that makes the double describe an image
// with TpmSupport (its value).
const ImageTPMSupportTag = "shim:tpm-support"

type shimImageTPM struct {
	mu  sync.Mutex
	tpm map[string]string // image id -> TpmSupport
}

// RegisterEC2ImageTPM makes the shim describe tagged images with
// TpmSupport.
func RegisterEC2ImageTPM(s *Shim) (remove func()) {
	d := &shimImageTPM{tpm: map[string]string{}}
	s.OnReset(func() { d.mu.Lock(); clear(d.tpm); d.mu.Unlock() })
	a := s.HandleOver("ec2", "CreateTags", d.createTags)
	b := s.HandleOver("ec2", "DescribeImages", d.describe)
	return func() { a(); b() }
}

func (d *shimImageTPM) createTags(w http.ResponseWriter, r *Request, next HandlerFunc) {
	var value string
	for i := 1; ; i++ {
		k := r.Form.Get("Tag." + strconv.Itoa(i) + ".Key")
		if k == "" {
			break
		}
		if k == ImageTPMSupportTag {
			value = r.Form.Get("Tag." + strconv.Itoa(i) + ".Value")
		}
	}
	if value != "" {
		d.mu.Lock()
		for _, id := range shimIndexed(r.Form, "ResourceId") {
			if strings.HasPrefix(id, "ami-") {
				d.tpm[id] = value
			}
		}
		d.mu.Unlock()
	}
	next(w, r)
}

func (d *shimImageTPM) describe(w http.ResponseWriter, r *Request, next HandlerFunc) {
	d.mu.Lock()
	if len(d.tpm) == 0 {
		d.mu.Unlock()
		next(w, r)
		return
	}
	tpm := make(map[string]string, len(d.tpm))
	for k, v := range d.tpm {
		tpm[k] = v
	}
	d.mu.Unlock()
	rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	next(rec, r)
	body := rec.body.String()
	if rec.status == http.StatusOK {
		for id, v := range tpm {
			body = strings.ReplaceAll(body, "<imageId>"+id+"</imageId>", "<imageId>"+id+"</imageId><tpmSupport>"+v+"</tpmSupport>")
		}
	}
	for k, vs := range rec.header {
		if k == "Content-Length" {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.status)
	_, _ = io.WriteString(w, body)
}

// bufferedResponse holds a handler's answer for a double to amend.
type bufferedResponse struct {
	header http.Header
	status int
	body   strings.Builder
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) WriteHeader(code int)        { b.status = code }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
