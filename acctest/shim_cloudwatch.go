package acctest

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
)

// moto 5.2.1 keeps an alarm's tags after DeleteAlarms, and a new alarm of
// the same name (the same ARN) starts with them; CloudWatch deletes them
// with the alarm. So once moto has deleted alarms, the shim removes their
// tags, next to moto: a held call or a lost answer behaves as CloudWatch
// does. Nothing in the product depends on this.

// forwardDeleteAlarms serves a DeleteAlarms call through serve (moto) and
// then drops the tags of the alarms it names.
func forwardDeleteAlarms(w http.ResponseWriter, r *Request, serve func(http.ResponseWriter)) {
	rec := httptest.NewRecorder()
	serve(rec)
	if rec.Code == http.StatusOK {
		for i := 1; ; i++ {
			name := r.Form.Get(fmt.Sprintf("AlarmNames.member.%d", i))
			if name == "" {
				break
			}
			dropAlarmTags(r, "arn:aws:cloudwatch:"+r.Region+":"+ShimAccountID+":alarm:"+name)
		}
	}
	copyRecorded(w, rec)
}

func dropAlarmTags(r *Request, arn string) {
	resp, err := r.Forward([]byte(url.Values{"Action": {"ListTagsForResource"}, "Version": {"2010-08-01"}, "ResourceARN": {arn}}.Encode()))
	if err != nil {
		return
	}
	var out struct {
		Keys []string `xml:"ListTagsForResourceResult>Tags>member>Key"`
	}
	err = xml.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || len(out.Keys) == 0 {
		return
	}
	form := url.Values{"Action": {"UntagResource"}, "Version": {"2010-08-01"}, "ResourceARN": {arn}}
	for i, k := range out.Keys {
		form.Set(fmt.Sprintf("TagKeys.member.%d", i+1), k)
	}
	if resp, err := r.Forward([]byte(form.Encode())); err == nil {
		resp.Body.Close()
	}
}
