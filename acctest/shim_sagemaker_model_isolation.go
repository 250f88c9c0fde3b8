package acctest

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
)

// The SageMaker model network-isolation double: moto 5.2.1 ignores
// CreateModel's EnableNetworkIsolation and DescribeModel always answers
// false, so the shim records what each CreateModel asked for (by region and
// model name) and puts it into DescribeModel's answer, as SageMaker does.
// moto also answers "VpcConfig": {} for a model made without one, where
// SageMaker leaves VpcConfig out; the double leaves it out too. moto keeps
// a VpcConfig that was given as it was given, which is what SageMaker
// does. It is test code.

type shimModelIsolation struct {
	mu       sync.Mutex
	isolated map[string]bool // region/model -> EnableNetworkIsolation asked for
}

// RegisterSageMakerModelIsolation makes the shim keep each model's
// EnableNetworkIsolation (a test double: moto drops it).
func RegisterSageMakerModelIsolation(s *Shim) (remove func()) {
	d := &shimModelIsolation{isolated: map[string]bool{}}
	s.OnReset(func() { d.mu.Lock(); clear(d.isolated); d.mu.Unlock() })
	a := s.HandleOver("sagemaker", "CreateModel", d.create)
	b := s.HandleOver("sagemaker", "DescribeModel", d.describe)
	c := s.HandleOver("sagemaker", "DeleteModel", d.delete)
	return func() { a(); b(); c() }
}

func (d *shimModelIsolation) create(w http.ResponseWriter, r *Request, next HandlerFunc) {
	var in struct {
		ModelName              string
		EnableNetworkIsolation *bool
	}
	if err := r.DecodeJSON(&in); err == nil && in.ModelName != "" {
		rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
		next(rec, r)
		if rec.status == http.StatusOK {
			d.mu.Lock()
			d.isolated[r.Region+"/"+in.ModelName] = in.EnableNetworkIsolation != nil && *in.EnableNetworkIsolation
			d.mu.Unlock()
		}
		replay(w, rec, rec.body.String())
		return
	}
	next(w, r)
}

func (d *shimModelIsolation) describe(w http.ResponseWriter, r *Request, next HandlerFunc) {
	var in struct{ ModelName string }
	_ = r.DecodeJSON(&in)
	rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	next(rec, r)
	body := rec.body.String()
	var out map[string]any
	if rec.status == http.StatusOK && json.Unmarshal([]byte(body), &out) == nil {
		d.mu.Lock()
		isolated := d.isolated[r.Region+"/"+in.ModelName]
		d.mu.Unlock()
		out["EnableNetworkIsolation"] = isolated
		if v, ok := out["VpcConfig"].(map[string]any); ok && len(v) == 0 {
			delete(out, "VpcConfig")
		}
		if b, err := json.Marshal(out); err == nil {
			body = string(b)
		}
	}
	replay(w, rec, body)
}

func (d *shimModelIsolation) delete(w http.ResponseWriter, r *Request, next HandlerFunc) {
	var in struct{ ModelName string }
	if r.DecodeJSON(&in) == nil {
		d.mu.Lock()
		delete(d.isolated, r.Region+"/"+in.ModelName)
		d.mu.Unlock()
	}
	next(w, r)
}

// replay writes a buffered answer, body in place of its own.
func replay(w http.ResponseWriter, rec *bufferedResponse, body string) {
	for k, vs := range rec.header {
		if k == "Content-Length" {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.status)
	_, _ = io.WriteString(w, body)
}
