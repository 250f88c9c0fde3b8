package acctest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
)

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// WriteEC2XML writes a successful EC2 query response:
// <{action}Response xmlns=...><requestId>...</requestId>BODY</{action}Response>.
// body is either a struct whose fields become the children (tag them with
// `xml:"placementGroupSet>item"` and the like), or a string or []byte of
// ready-made inner XML.
func WriteEC2XML(w http.ResponseWriter, action string, body any) {
	inner, err := innerXML(body)
	if err != nil {
		WriteAWSError(w, &Request{Protocol: ProtocolEC2Query}, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<%sResponse xmlns="%s"><requestId>%s</requestId>`, action, ec2Namespace, requestID())
	b.Write(inner)
	fmt.Fprintf(&b, "</%sResponse>", action)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

// innerXML renders body's children without an enclosing element.
func innerXML(body any) ([]byte, error) {
	switch v := body.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case []byte:
		return v, nil
	}
	var b bytes.Buffer
	enc := xml.NewEncoder(&b)
	if err := enc.EncodeElement(body, xml.StartElement{Name: xml.Name{Local: "x"}}); err != nil {
		return nil, fmt.Errorf("encoding response: %w", err)
	}
	s := b.Bytes()
	// Strip <x ...> and </x>.
	start := bytes.IndexByte(s, '>')
	if start < 0 || !bytes.HasSuffix(s, []byte("</x>")) {
		if bytes.HasSuffix(s, []byte("/>")) {
			return nil, nil
		}
		return nil, fmt.Errorf("encoding response: unexpected XML %q", s)
	}
	return s[start+1 : len(s)-len("</x>")], nil
}

// WriteJSON writes a successful JSON 1.1 response (SageMaker, KMS, SSM).
func WriteJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteAWSError(w, &Request{Protocol: ProtocolJSON}, http.StatusInternalServerError, "InternalFailure", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-RequestId", requestID())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// WriteAWSError writes an error in the encoding r's protocol uses:
//   - EC2: <Response><Errors><Error><Code>..</Code><Message>..</Message></Error></Errors><RequestID>..</RequestID></Response>
//   - query (STS, IAM): <ErrorResponse><Error><Type>Sender</Type><Code>..</Code><Message>..</Message></Error>...</ErrorResponse>
//   - JSON (SageMaker, KMS, SSM) and REST-JSON: {"__type": code, "message": msg} with X-Amzn-ErrorType
//   - S3: <Error><Code>..</Code><Message>..</Message><RequestId>..</RequestId></Error>
//
// status 0 means 400.
func WriteAWSError(w http.ResponseWriter, r *Request, status int, code, msg string) {
	if status == 0 {
		status = http.StatusBadRequest
	}
	id := requestID()
	var body string
	switch r.Protocol {
	case ProtocolJSON, ProtocolRESTJSON:
		b, _ := json.Marshal(map[string]string{"__type": code, "message": msg, "Message": msg})
		ct := "application/x-amz-json-1.1"
		if r.HTTP != nil && strings.Contains(r.HTTP.Header.Get("Content-Type"), "1.0") {
			ct = "application/x-amz-json-1.0"
		}
		if r.Protocol == ProtocolRESTJSON {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("X-Amzn-ErrorType", code)
		w.Header().Set("X-Amzn-RequestId", id)
		w.WriteHeader(status)
		_, _ = w.Write(b)
		return
	case ProtocolQuery:
		kind := "Sender"
		if status >= 500 {
			kind = "Receiver"
		}
		body = fmt.Sprintf(`<ErrorResponse><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
			kind, xmlEscape(code), xmlEscape(msg), id)
	case ProtocolRESTXML:
		body = fmt.Sprintf(`<Error><Code>%s</Code><Message>%s</Message><RequestId>%s</RequestId></Error>`,
			xmlEscape(code), xmlEscape(msg), id)
	default: // EC2 and anything unknown
		body = fmt.Sprintf(`<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>`,
			xmlEscape(code), xmlEscape(msg), id)
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("X-Amzn-RequestId", id)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + body))
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
