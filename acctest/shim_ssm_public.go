package acctest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Test double: the AWS public SSM parameters of the Deep Learning Base AMIs.
//
// AWS publishes the id of the latest Deep Learning Base AMI of each region
// as a public SSM parameter under /aws/service/deeplearning/; the product's
// default GPU training image is one of them (platform.DefaultPlatform's
// TrainingImage, the gpu-training-cluster and uae-ml-platform modules'
// image default). moto 5.2.1 ships only Amazon Linux's public parameters
// (/aws/service/ami-amazon-linux-latest/...), so GetParameter and
// GetParameters of a Deep Learning AMI name answer ParameterNotFound there.
//
// The shim answers GetParameter and GetParameters for the names in
// ssmPublicParameters the way AWS does (the parameter's own name, Type
// String, DataType text, a Version, and the public parameter ARN with no
// account, arn:aws:ssm:REGION::parameter/aws/service/...), holding the AMI
// id moto publishes for an Amazon Linux 2023 image of the same architecture
// in the same region: an image moto's EC2 has, so DescribeImages finds it.
// The id is not a Deep Learning AMI's: a test checks resolution, not which
// operating system boots. Version, LastModifiedDate and a version selector
// (name:N) are moto's for that Amazon Linux parameter; an answer to a
// selector names it (Selector), as AWS does. Every other name goes on to
// moto unchanged (GetParameters asks moto for the other names of a call and
// merges its answer). GetParametersByPath and DescribeParameters are not
// served: the product reads an image parameter with GetParameter only
// (cloud.ResolveImage).

// ssmPublicParameters maps each public parameter the double publishes to
// the moto public parameter whose value it holds.
var ssmPublicParameters = map[string]string{
	// The product's default training image (platform.DefaultPlatform).
	"/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
}

// RegisterSSMPublicParameters makes the shim answer GetParameter and
// GetParameters for the Deep Learning AMI public parameters moto lacks
// (ssmPublicParameters), and returns a function that removes the double.
func RegisterSSMPublicParameters(s *Shim) (remove func()) {
	a := s.HandleOver("ssm", "GetParameter", ssmGetParameter)
	b := s.HandleOver("ssm", "GetParameters", ssmGetParameters)
	return func() { a(); b() }
}

// ssmPublicName splits name (a parameter name, with an optional :version or
// :label selector) and reports whether the double publishes it; backing
// is the moto parameter that holds its value, with the same selector.
func ssmPublicName(name string) (public, backing string, ok bool) {
	public, selector := name, ""
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		public, selector = name[:i], name[i:]
	}
	b, ok := ssmPublicParameters[public]
	if !ok {
		return "", "", false
	}
	return public, b + selector, true
}

// ssmParameter is a parameter as GetParameter(s) answer it.
type ssmParameter map[string]any

// publish turns moto's backing parameter into the public one asked for as
// name: its own name, the selector asked for (AWS names it, moto does not)
// and the public parameter ARN (AWS puts no account in it).
func (p ssmParameter) publish(public, name string) {
	p["Name"] = public
	if sel := strings.TrimPrefix(name, public); sel != "" {
		p["Selector"] = sel
	}
	partition, region := "aws", ""
	if arn, _ := p["ARN"].(string); strings.HasPrefix(arn, "arn:") {
		if f := strings.SplitN(arn, ":", 6); len(f) == 6 {
			partition, region = f[1], f[3]
		}
	}
	p["ARN"] = fmt.Sprintf("arn:%s:ssm:%s::parameter%s", partition, region, public)
	p["Type"] = "String"
	if _, ok := p["DataType"]; !ok {
		p["DataType"] = "text"
	}
}

// motoSSM sends action with body to moto in r's region and returns the
// status and the body of moto's answer.
func motoSSM(r *Request, action string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	sub := *r
	sub.HTTP = r.HTTP.Clone(r.HTTP.Context())
	sub.HTTP.Header.Set("X-Amz-Target", "AmazonSSM."+action)
	resp, err := sub.Forward(b)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("reading moto's %s: %w", action, err)
	}
	return resp.StatusCode, out, nil
}

// ssmMotoError is an error answer of moto's SSM.
type ssmMotoError struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

func ssmGetParameter(w http.ResponseWriter, r *Request, next HandlerFunc) {
	var in struct {
		Name string `json:"Name"`
	}
	if err := r.DecodeJSON(&in); err != nil {
		next(w, r)
		return
	}
	public, backing, ok := ssmPublicName(in.Name)
	if !ok {
		next(w, r)
		return
	}
	status, body, err := motoSSM(r, "GetParameter", map[string]any{"Name": backing})
	if err != nil {
		WriteAWSError(w, r, http.StatusBadGateway, "ShimUpstreamError", err.Error())
		return
	}
	if status != http.StatusOK {
		var e ssmMotoError
		_ = json.Unmarshal(body, &e)
		if e.Type == "" {
			e.Type = "InternalServerError"
		}
		// moto's message names its own parameter; the caller asked for ours.
		WriteAWSError(w, r, status, e.Type, strings.ReplaceAll(e.Message, strings.SplitN(backing, ":", 2)[0], public))
		return
	}
	var out struct {
		Parameter ssmParameter `json:"Parameter"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Parameter == nil {
		WriteAWSError(w, r, http.StatusBadGateway, "ShimUpstreamError", fmt.Sprintf("reading moto's GetParameter of %s: %v: %s", backing, err, body))
		return
	}
	out.Parameter.publish(public, in.Name)
	WriteJSON(w, out)
}

func ssmGetParameters(w http.ResponseWriter, r *Request, next HandlerFunc) {
	var in struct {
		Names          []string `json:"Names"`
		WithDecryption *bool    `json:"WithDecryption,omitempty"`
	}
	if err := r.DecodeJSON(&in); err != nil {
		next(w, r)
		return
	}
	var others, ours []string
	for _, n := range in.Names {
		if _, _, ok := ssmPublicName(n); ok {
			ours = append(ours, n)
		} else {
			others = append(others, n)
		}
	}
	if len(ours) == 0 {
		next(w, r)
		return
	}

	out := struct {
		Parameters        []ssmParameter `json:"Parameters"`
		InvalidParameters []string       `json:"InvalidParameters"`
	}{Parameters: []ssmParameter{}, InvalidParameters: []string{}}
	if len(others) > 0 {
		req := map[string]any{"Names": others}
		if in.WithDecryption != nil {
			req["WithDecryption"] = *in.WithDecryption
		}
		status, body, err := motoSSM(r, "GetParameters", req)
		if err != nil {
			WriteAWSError(w, r, http.StatusBadGateway, "ShimUpstreamError", err.Error())
			return
		}
		if status != http.StatusOK { // a refused request: moto's answer as it is
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.WriteHeader(status)
			_, _ = w.Write(body)
			return
		}
		if err := json.Unmarshal(body, &out); err != nil {
			WriteAWSError(w, r, http.StatusBadGateway, "ShimUpstreamError", fmt.Sprintf("reading moto's GetParameters: %v: %s", err, body))
			return
		}
	}
	for _, n := range ours {
		public, backing, _ := ssmPublicName(n)
		status, body, err := motoSSM(r, "GetParameter", map[string]any{"Name": backing})
		if err != nil {
			WriteAWSError(w, r, http.StatusBadGateway, "ShimUpstreamError", err.Error())
			return
		}
		if status != http.StatusOK {
			var e ssmMotoError
			_ = json.Unmarshal(body, &e)
			if strings.HasPrefix(e.Type, "ParameterNotFound") || strings.HasPrefix(e.Type, "ParameterVersion") {
				// GetParameters names a parameter (or version) it cannot
				// find instead of failing.
				out.InvalidParameters = append(out.InvalidParameters, n)
				continue
			}
			WriteAWSError(w, r, status, e.Type, e.Message)
			return
		}
		var p struct {
			Parameter ssmParameter `json:"Parameter"`
		}
		if err := json.Unmarshal(body, &p); err != nil || p.Parameter == nil {
			WriteAWSError(w, r, http.StatusBadGateway, "ShimUpstreamError", fmt.Sprintf("reading moto's GetParameter of %s: %v: %s", backing, err, body))
			return
		}
		p.Parameter.publish(public, n)
		out.Parameters = append(out.Parameters, p.Parameter)
	}
	WriteJSON(w, out)
}
