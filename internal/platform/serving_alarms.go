package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// Defaults of the standard rollback alarms: what a front end declares for a
// field the user leaves unset.
const (
	ServingDefaultLatencyP99Ms       = 500
	ServingDefault5XXRate            = 0.01
	ServingDefaultAlarmPeriodSeconds = 60
	ServingDefaultEvaluationPeriods  = 3
	// svMaxAlarmWindow is CloudWatch's bound on period x evaluation
	// periods of a metric alarm: one day.
	svMaxAlarmWindow     = 86400
	servingAlarmsPath    = servingDeploymentPath + ".standard_alarms"
	servingAlarmPrefix   = "mlplatform-"
	svMaxAlarmNameLength = 255
)

// ServingEndpointTag is the tag that names, on each standard alarm, the
// endpoint it watches; with the creation token it proves the alarm is the
// endpoint's own.
const ServingEndpointTag = FeatureStoreTagPrefix + "serving-endpoint"

// ErrServingAlarmForeign is wrapped when an alarm of a standard alarm's name
// exists that this endpoint cannot prove it made.
var ErrServingAlarmForeign = errors.New("an alarm of that name exists and is not this endpoint's")

// ServingStandardAlarms asks the provider to create, per production
// variant, the standard rollback alarms: p99 ModelLatency above
// LatencyP99Ms, and the share of invocations answered 5xx above
// Error5XXRate (a fraction: 0.01 is 1%). A zero field takes its default.
type ServingStandardAlarms struct {
	LatencyP99Ms      float64
	Error5XXRate      float64
	PeriodSeconds     int64
	EvaluationPeriods int64
}

func (a ServingStandardAlarms) withDefaults() ServingStandardAlarms {
	if a.LatencyP99Ms == 0 {
		a.LatencyP99Ms = ServingDefaultLatencyP99Ms
	}
	if a.Error5XXRate == 0 {
		a.Error5XXRate = ServingDefault5XXRate
	}
	if a.PeriodSeconds == 0 {
		a.PeriodSeconds = ServingDefaultAlarmPeriodSeconds
	}
	if a.EvaluationPeriods == 0 {
		a.EvaluationPeriods = ServingDefaultEvaluationPeriods
	}
	return a
}

func standardAlarms(s ServingEndpointSpec) *ServingStandardAlarms {
	if s.Deployment == nil || s.Deployment.StandardAlarms == nil {
		return nil
	}
	a := s.Deployment.StandardAlarms.withDefaults()
	return &a
}

// ServingAlarmName is the name of a standard alarm of an endpoint variant:
// mlplatform-ENDPOINT-VARIANT-p99-latency or mlplatform-ENDPOINT-VARIANT-5xx.
func ServingAlarmName(endpoint, variant string, kind cloud.ServingAlarmKind) string {
	return servingAlarmPrefix + endpoint + "-" + variant + "-" + string(kind)
}

// ServingStandardAlarmNames lists the standard alarms s asks for, variant by
// variant, latency first; nil when it asks for none.
func ServingStandardAlarmNames(s ServingEndpointSpec) []string {
	if standardAlarms(s) == nil {
		return nil
	}
	out := []string{}
	for _, v := range s.Variants {
		out = append(out, ServingAlarmName(s.Name, v.Name, cloud.AlarmLatencyP99), ServingAlarmName(s.Name, v.Name, cloud.Alarm5XXRate))
	}
	return out
}

// servingAlarmsWanted are the alarms s asks for, with tags.
func servingAlarmsWanted(s ServingEndpointSpec, tags map[string]string, token string) []cloud.ServingAlarm {
	a := standardAlarms(s)
	if a == nil {
		return nil
	}
	tags = cloneTags(tags)
	tags[ServingEndpointTokenTag] = token
	tags[ServingEndpointTag] = s.Name
	var out []cloud.ServingAlarm
	for _, v := range s.Variants {
		base := cloud.ServingAlarm{Endpoint: s.Name, Variant: v.Name, PeriodSeconds: int32(a.PeriodSeconds), EvaluationPeriods: int32(a.EvaluationPeriods), Tags: tags}
		p99, rate := base, base
		p99.Kind, p99.Name, p99.Threshold = cloud.AlarmLatencyP99, ServingAlarmName(s.Name, v.Name, cloud.AlarmLatencyP99), a.LatencyP99Ms*1000 // ModelLatency is in microseconds
		rate.Kind, rate.Name, rate.Threshold = cloud.Alarm5XXRate, ServingAlarmName(s.Name, v.Name, cloud.Alarm5XXRate), a.Error5XXRate
		out = append(out, p99, rate)
	}
	return out
}

// sameAlarm: have is what want declares (tags aside: PutMetricAlarm sets
// them only on create, so they are compared and set apart).
func sameAlarm(want, have cloud.ServingAlarm) bool {
	return want.Kind == have.Kind && want.Endpoint == have.Endpoint && want.Variant == have.Variant &&
		want.Threshold == have.Threshold && want.PeriodSeconds == have.PeriodSeconds && want.EvaluationPeriods == have.EvaluationPeriods
}

// alarmTagChanges returns the tags to set on an alarm that has have so that
// it carries want, and the keys to remove: every other key but AWS's own
// (aws:), which cannot be changed. The alarm is the endpoint's, so its tags
// are the endpoint's, as they are on create.
func alarmTagChanges(want, have map[string]string) (set map[string]string, remove []string) {
	set = map[string]string{}
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			set[k] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "aws:") {
			remove = append(remove, k)
		}
	}
	return set, remove
}

// ownsAlarm: the alarm carries the endpoint's name and its creation token.
// With no token known (the endpoint is gone), an alarm that names the
// endpoint and carries a token of this provider is the endpoint's: names of
// endpoints are unique in an account and region.
func ownsAlarm(a cloud.ServingAlarm, endpoint, token string) bool {
	if a.Tags[ServingEndpointTag] != endpoint || a.Tags[ServingEndpointTokenTag] == "" {
		return false
	}
	return token == "" || a.Tags[ServingEndpointTokenTag] == token
}

func svStandardAlarms(v *validator, s ServingEndpointSpec) {
	d := s.Deployment
	if d == nil || d.StandardAlarms == nil || !v.unknown.known(servingAlarmsPath) {
		return
	}
	a := *d.StandardAlarms
	if a.LatencyP99Ms < 0 {
		v.add(servingAlarmsPath+".latency_p99_ms", "the p99 latency threshold must be more than 0 milliseconds (got %g)", a.LatencyP99Ms)
	}
	if a.Error5XXRate < 0 || a.Error5XXRate > 1 {
		v.add(servingAlarmsPath+".error_5xx_rate", "the 5xx rate is a fraction of invocations between 0 and 1, e.g. 0.01 for 1%% (got %g)", a.Error5XXRate)
	}
	if a.PeriodSeconds < 0 || a.PeriodSeconds%60 != 0 {
		v.add(servingAlarmsPath+".period_seconds", "the period must be a multiple of 60 seconds: SageMaker publishes endpoint metrics each minute (got %d)", a.PeriodSeconds)
	}
	if a.EvaluationPeriods < 0 {
		v.add(servingAlarmsPath+".evaluation_periods", "must be at least 1 (got %d)", a.EvaluationPeriods)
	}
	if w := a.withDefaults(); w.PeriodSeconds > 0 && w.EvaluationPeriods > 0 && w.PeriodSeconds*w.EvaluationPeriods > svMaxAlarmWindow {
		v.add(servingAlarmsPath+".evaluation_periods", "period_seconds x evaluation_periods is %d seconds; CloudWatch evaluates at most one day (%d)", w.PeriodSeconds*w.EvaluationPeriods, svMaxAlarmWindow)
	}
	if !v.unknown.known(servingVariantsPath, "name") {
		return
	}
	if n := len(d.RollbackAlarms) + 2*len(s.Variants); n > svMaxRollbackAlarms {
		v.add(servingAlarmsPath, "%d rollback alarms in all (%d in rollback_alarms, 2 standard alarms for each of %d variants); a deployment takes at most %d", n, len(d.RollbackAlarms), len(s.Variants), svMaxRollbackAlarms)
	}
	for _, name := range ServingStandardAlarmNames(s) {
		if len(name) > svMaxAlarmNameLength {
			v.add(servingAlarmsPath, "alarm name %s is longer than %d characters: shorten the endpoint or variant name", name, svMaxAlarmNameLength)
		}
		if slices.Contains(d.RollbackAlarms, name) {
			v.add(servingDeploymentPath+".rollback_alarms", "%s is a standard alarm this endpoint creates; remove it from rollback_alarms", name)
		}
	}
}

// CheckServingAlarms is the plan-time check of the standard alarms: an alarm
// of a standard alarm's name that names another endpoint, or carries no
// creation token of this provider (made outside it), is refused on the
// standard_alarms attribute, before any write: the provider would otherwise
// change an alarm it does not own. Skipped while the name or the variants
// are unknown; the create and update check again at apply, with the token.
func (e *Env) CheckServingAlarms(ctx context.Context, s ServingEndpointSpec, unknown []string) ([]Problem, error) {
	o := unknownPaths(unknown)
	if standardAlarms(s) == nil || !o.known("name", servingVariantsPath) {
		return nil, nil
	}
	err := checkAlarmsOwned(ctx, e.Clients.CloudWatch(), s, "")
	if errors.Is(err, ErrServingAlarmForeign) {
		return []Problem{{Path: servingAlarmsPath, Detail: err.Error()}}, nil
	}
	return nil, err
}

// checkAlarmsOwned refuses a standard alarm's name taken by an alarm this
// endpoint does not own (token "": one this provider made for an endpoint
// of the name).
func checkAlarmsOwned(ctx context.Context, cw cloud.ServingAlarmAPI, s ServingEndpointSpec, token string) error {
	have, err := cloud.FindServingAlarms(ctx, cw, ServingStandardAlarmNames(s))
	if err != nil {
		return fmt.Errorf("looking for the standard alarms of endpoint %s: %w", s.Name, err)
	}
	return refuseForeignAlarms(have, s, token)
}

// refuseForeignAlarms is checkAlarmsOwned on alarms already read: have may
// hold other alarms than s's standard ones; only those are looked at.
func refuseForeignAlarms(have map[string]cloud.ServingAlarm, s ServingEndpointSpec, token string) error {
	var foreign []string
	for _, name := range ServingStandardAlarmNames(s) {
		if a, ok := have[name]; ok && !ownsAlarm(a, s.Name, token) {
			foreign = append(foreign, name)
		}
	}
	slices.Sort(foreign)
	if len(foreign) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s exists without this endpoint's %s and %s tags, so the provider will not change or delete it; delete or rename that alarm, or choose another endpoint or variant name",
		ErrServingAlarmForeign, strings.Join(foreign, ", "), ServingEndpointTag, ServingEndpointTokenTag)
}

// applyServingAlarms puts the standard alarms s asks for where they are
// missing or differ (PutMetricAlarm replaces, so a retry is harmless), after
// refusing any name taken by an alarm the endpoint does not own. With
// prune, the endpoint's own alarms s no longer asks for are deleted.
func applyServingAlarms(ctx context.Context, cw cloud.ServingAlarmAPI, s ServingEndpointSpec, tags map[string]string, token string, prune bool) error {
	want := servingAlarmsWanted(s, tags, token)
	// One read serves both the ownership check and the comparison: the
	// standard alarms' names all start with the prefix.
	have, err := cloud.ListServingAlarms(ctx, cw, servingAlarmPrefix+s.Name+"-")
	if err != nil {
		return fmt.Errorf("reading the standard alarms of endpoint %s: %w", s.Name, err)
	}
	if len(want) > 0 {
		if err := refuseForeignAlarms(have, s, token); err != nil {
			return err
		}
	}
	for _, a := range want {
		h, ok := have[a.Name]
		if !ok || !sameAlarm(a, h) {
			if err := cloud.PutServingAlarm(ctx, cw, a); err != nil {
				return err
			}
		}
		if !ok {
			continue // created with its tags
		}
		// An existing alarm keeps its tags through PutMetricAlarm: give it
		// the endpoint's tags now.
		if set, remove := alarmTagChanges(a.Tags, h.Tags); len(set) > 0 || len(remove) > 0 {
			if err := cloud.RetagServingAlarm(ctx, cw, a.Name, h.ARN, set, remove); err != nil {
				return err
			}
		}
	}
	if !prune {
		return nil
	}
	var drop []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if ownsAlarm(have[name], s.Name, token) && !slices.ContainsFunc(want, func(a cloud.ServingAlarm) bool { return a.Name == name }) {
			drop = append(drop, name)
		}
	}
	return cloud.DeleteServingAlarms(ctx, cw, drop)
}

// deleteServingAlarms deletes the standard alarms the endpoint owns (token
// "": the endpoint is gone; see ownsAlarm).
func deleteServingAlarms(ctx context.Context, cw cloud.ServingAlarmAPI, endpoint, token string) error {
	have, err := cloud.ListServingAlarms(ctx, cw, servingAlarmPrefix+endpoint+"-")
	if err != nil {
		return fmt.Errorf("reading the standard alarms of endpoint %s: %w", endpoint, err)
	}
	var drop []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if ownsAlarm(have[name], endpoint, token) {
			drop = append(drop, name)
		}
	}
	return cloud.DeleteServingAlarms(ctx, cw, drop)
}

// withServingAlarms reads the endpoint's own standard alarms into ep.
func withServingAlarms(ctx context.Context, cw cloud.ServingAlarmAPI, ep *ServingEndpoint) error {
	if ep == nil || cw == nil {
		return nil
	}
	have, err := cloud.ListServingAlarms(ctx, cw, servingAlarmPrefix+ep.Spec.Name+"-")
	if err != nil {
		return fmt.Errorf("reading the standard alarms of endpoint %s: %w", ep.Spec.Name, err)
	}
	ep.alarms = map[string]cloud.ServingAlarm{}
	for name, a := range have {
		if ownsAlarm(a, ep.Spec.Name, servingAlarmOwner(ep.CreationToken, ep.ARN)) {
			ep.alarms[name] = a
		}
	}
	return nil
}

// readBackStandardAlarms is the standard alarms as they exist, in the shape
// declared: as declared when every alarm it asks for exists as put; the
// thresholds found when one was changed outside; nil (so the next apply puts
// them again) when one is gone or watches something else. Alarms not read
// (found is nil) keep the declared value.
func readBackStandardAlarms(declared ServingEndpointSpec, found map[string]cloud.ServingAlarm) *ServingStandardAlarms {
	d := declared.Deployment
	if d == nil || d.StandardAlarms == nil || found == nil {
		if d == nil {
			return nil
		}
		return d.StandardAlarms
	}
	out := *d.StandardAlarms
	for _, w := range servingAlarmsWanted(declared, nil, "") {
		h, ok := found[w.Name]
		if !ok || h.Kind != w.Kind || h.Endpoint != w.Endpoint || h.Variant != w.Variant {
			return nil
		}
		if sameAlarm(w, h) {
			continue
		}
		if w.Kind == cloud.AlarmLatencyP99 {
			out.LatencyP99Ms = h.Threshold / 1000
		} else {
			out.Error5XXRate = h.Threshold
		}
		out.PeriodSeconds, out.EvaluationPeriods = int64(h.PeriodSeconds), int64(h.EvaluationPeriods)
	}
	return &out
}

// servingAlarmOwner is what proves a standard alarm is the endpoint's: its
// creation token, or its ARN when it has none (an imported endpoint).
func servingAlarmOwner(token, arn string) string {
	if token != "" {
		return token
	}
	return arn
}

// alarmsAfterCreate puts the standard alarms of a new endpoint once it is
// in service (a create does not use the deployment config; the first
// update does) and reads them into ep.
func alarmsAfterCreate(ctx context.Context, cw cloud.ServingAlarmAPI, s ServingEndpointSpec, tags map[string]string, ep *ServingEndpoint) error {
	if standardAlarms(s) == nil || ep == nil {
		return nil
	}
	if err := applyServingAlarms(ctx, cw, s, tags, servingAlarmOwner(ep.CreationToken, ep.ARN), false); err != nil {
		rctx, cancel := recordContext(ctx, servingRecordTimeout)
		defer cancel()
		_ = withServingAlarms(rctx, cw, ep) // what exists, for the record
		return fmt.Errorf("endpoint %s is in service, but its standard alarms were not all put: %w", s.Name, err)
	}
	return withServingAlarms(ctx, cw, ep)
}

// alarmsBeforeUpdate puts the standard alarms s asks for before the
// endpoint is updated, so that the deployment config can name them. It
// returns the owner the endpoint proves its alarms by.
func alarmsBeforeUpdate(ctx context.Context, api cloud.ServingAPI, cw cloud.ServingAlarmAPI, s ServingEndpointSpec, tags map[string]string) (string, error) {
	cur, err := cloud.FindServingEndpoint(ctx, api, s.Name)
	if err != nil {
		return "", fmt.Errorf("reading endpoint %s before update: %w", s.Name, err)
	}
	owner := servingAlarmOwner(cur.Tags[ServingEndpointTokenTag], cur.ARN)
	if standardAlarms(s) == nil {
		return owner, nil
	}
	if err := applyServingAlarms(ctx, cw, s, tags, owner, false); err != nil {
		return owner, fmt.Errorf("putting the standard alarms of endpoint %s: %w", s.Name, err)
	}
	return owner, nil
}

// alarmsAfterUpdate deletes the endpoint's own standard alarms s no longer
// asks for, and reads them into ep.
func alarmsAfterUpdate(ctx context.Context, cw cloud.ServingAlarmAPI, s ServingEndpointSpec, tags map[string]string, owner string, ep *ServingEndpoint) error {
	if err := applyServingAlarms(ctx, cw, s, tags, owner, true); err != nil {
		return fmt.Errorf("updating the standard alarms of endpoint %s: %w", s.Name, err)
	}
	return withServingAlarms(ctx, cw, ep)
}

// deleteServingWithAlarms deletes the endpoint (deleteServing), then the
// standard alarms it owns: only once it is gone, as they may roll back a
// deployment under way until then.
func deleteServingWithAlarms(ctx context.Context, api cloud.ServingAPI, as cloud.ServingScalingAPI, cw cloud.ServingAlarmAPI, name string, known ServingEndpointPrior, wait ServingWait) error {
	owner := ""
	cur, err := cloud.FindServingEndpoint(ctx, api, name)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
	case err != nil:
		return fmt.Errorf("reading endpoint %s before delete: %w", name, err)
	default:
		owner = servingAlarmOwner(cur.Tags[ServingEndpointTokenTag], cur.ARN)
	}
	if err := deleteServing(ctx, api, as, name, known, wait); err != nil {
		return err
	}
	return deleteServingAlarms(ctx, cw, name, owner)
}

// wantsAlarms: the spec asks for standard alarms.
func wantsAlarms(s ServingEndpointSpec) bool { return standardAlarms(s) != nil }

// ServingStandardAlarmNamesOf is ServingStandardAlarmNames at plan time:
// known is false while the endpoint's or a variant's name is not known.
func ServingStandardAlarmNamesOf(s ServingEndpointSpec, unknown []string) (names []string, known bool) {
	o := unknownPaths(unknown)
	if !o.known("name", servingVariantsPath, servingAlarmsPath) {
		return nil, false
	}
	for i := range s.Variants {
		if !o.known(fmt.Sprintf("variants[%d].name", i)) {
			return nil, false
		}
	}
	return ServingStandardAlarmNames(s), true
}
