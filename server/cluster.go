package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/instances"
	"github.com/sluicehq/sluice/server/rules"
)

// maxExchangeItems bounds the asks, and the returns, of one exchange: an
// engine asks once or twice per cluster rule it runs.
const maxExchangeItems = 1000

// ClusterStatus is what the server's cluster rules decide on.
type ClusterStatus struct {
	// Enabled is true when the server runs with --redis: scope cluster
	// rules are accepted and share one count in Redis.
	Enabled bool `json:"enabled" example:"true"`
	// State is cluster while Redis answers, fallback while it does not
	// (each rule then does what its clusterFallback says); absent when not
	// enabled.
	State string `json:"state,omitempty" enums:"cluster,fallback" example:"cluster"`
	// Since is when the state began.
	Since *time.Time `json:"since,omitempty" format:"date-time"`
	// LastError is why Redis was last unreachable.
	LastError string `json:"lastError,omitempty" example:"dial tcp 127.0.0.1:6379: connect: connection refused"`
	// Rules are the cluster rules the server's engine runs (those without
	// an app), by name.
	Rules []ClusterRuleStatus `json:"rules"`
}

// ClusterRuleStatus is the state of one cluster rule on the server.
type ClusterRuleStatus struct {
	Name     string `json:"name" example:"payments-global"`
	Resource string `json:"resource" example:"POST:/api/pay"`
	// Engines is how many engines (server replicas and instances) shared
	// the rule, as Redis last said.
	Engines  int    `json:"engines" example:"4"`
	Fallback string `json:"fallback" enums:"local,pass,block" example:"local"`
	// FallbackThreshold is the server's threshold in a local fallback: in
	// force while fallingBack, what it would be otherwise.
	FallbackThreshold float64 `json:"fallbackThreshold" example:"250" format:"double"`
	FallingBack       bool    `json:"fallingBack" example:"false"`
}

// clusterHandler answers the cluster routes: the instances' exchanges with
// the shared count, which they reach through the server (they hold no
// Redis credentials), and the state of the server's cluster rules.
type clusterHandler struct {
	counter   engine.ClusterCounter // nil without --redis
	engine    *engine.Engine
	rules     *rules.Service
	instances *instances.Registry
	logger    *slog.Logger
}

func bindCluster(api apiRoutes, h *clusterHandler) {
	api.post("/cluster/exchange", instancesOr(admins), h.exchange)
	api.get("/cluster", viewers, h.status)
}

// exchange settles an instance's leasing round with the shared count.
//
//	@Summary		Lease from the cluster count (instances)
//	@ID				exchangeClusterLeases
//	@Description	An instance's engine leases passes of its scope cluster rules here, at most every 10 ms, since instances hold no Redis credentials: in one round it returns what ended leases left unspent, charges the passes it made on credit after an idle spell, and asks for leases, the current bucket's or the next one's. The server answers each ask, in order, with what Redis grants. The rule's threshold and statIntervalMs are the stored rule's, whatever the ask says; an ask for a key that is no enabled cluster rule gets nothing, with a lease already ended, and so does one, from a token scoped to apps, for a rule of another app (a rule without app is every app's). At most 1,000 asks and 1,000 returns; an exchange of neither is answered at once with no lease. 409 when the server has no Redis (--redis) and the exchange asks or returns; 503 when Redis does not answer (the instance's rules then fall back). The exchange counts among each rule's engines (which set the fallback share) only while the instance its engine names reports (POST /instances/report within 10 s); otherwise it leases as usual and counts as no engine. Tokens of role instance may post it; so may admins.
//	@Tags			instances
//	@Accept			json
//	@Produce		json
//	@Param			exchange	body		wire.ClusterExchange	true	"the engine, its returns and its asks"
//	@Success		200			{object}	wire.ClusterAnswer
//	@Failure		400			{object}	ErrorResponse	"the body is not a JSON object"
//	@Failure		401			{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403			{object}	ErrorResponse	"neither an instance token nor an admin"
//	@Failure		409			{object}	ErrorResponse	"the server has no cluster count (start it with --redis), and the exchange asks or returns"
//	@Failure		413			{object}	ErrorResponse	"the body is over 1 MiB"
//	@Failure		415			{object}	ErrorResponse	"the body has a Content-Encoding: compressed bodies are refused"
//	@Failure		422			{object}	ErrorResponse	"bad fields, each named in details (asks[2].want)"
//	@Failure		429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Failure		503			{object}	ErrorResponse	"Redis did not answer"
//	@Security		BearerAuth
//	@Router			/api/v1/cluster/exchange [post]
func (h *clusterHandler) exchange(c *fiber.Ctx) error {
	x, err := decodeExchange(c.Body())
	if err != nil {
		return err
	}
	if h.counter == nil && (len(x.Asks) > 0 || len(x.Returns) > 0) {
		return Conflict("this server has no cluster count: start it with --redis to run scope cluster rules")
	}
	// Each ask is judged by the stored rule, not by what the instance says
	// of it; keys that are no cluster rule get nothing, nor do those of a
	// rule that the caller's scope does not reach.
	p := principalOf(c)
	clusterRule := func(key string) (engine.FlowRule, bool) {
		rule, app, ok := h.rules.ClusterRule(key)
		return rule, ok && (app == "" || p.mayUseApp(app))
	}
	known := make([]bool, len(x.Asks))
	var forward engine.ClusterExchange
	for i, a := range x.Asks {
		rule, ok := clusterRule(a.Key)
		if known[i] = ok; !ok {
			continue
		}
		threshold := int64(rule.Threshold)
		a.Threshold, a.IntervalMs = threshold, rule.StatIntervalMs
		a.Want, a.Charge = min(a.Want, threshold), min(a.Charge, threshold)
		a.ChargeSpanMs = min(a.ChargeSpanMs, rule.StatIntervalMs)
		forward.Asks = append(forward.Asks, a)
	}
	for _, r := range x.Returns {
		if rule, ok := clusterRule(r.Key); ok {
			r.Unused = min(r.Unused, int64(rule.Threshold))
			forward.Returns = append(forward.Returns, r)
		}
	}
	var granted []engine.ClusterLease
	if len(forward.Asks) > 0 || len(forward.Returns) > 0 {
		// A rule's engines set each engine's fallback share, so an
		// exchange counts as an engine only while the instance it names
		// reports (else it leases as no engine): a token cannot lower
		// every engine's share by naming engines without end, and an
		// instance that stops reporting stops counting StaleAfter later.
		live, err := h.instances.Reporting(c.UserContext(), x.Engine)
		if err != nil {
			return err
		}
		if live {
			forward.Engine = "instance:" + x.Engine
		}
		if granted, err = h.counter.Exchange(c.UserContext(), forward); err != nil {
			h.logger.Warn("cluster: an instance's exchange failed: Redis did not answer", "instance", x.Engine, "err", err)
			return NewError(http.StatusServiceUnavailable, "the cluster count (Redis) did not answer; the instance's cluster rules fall back")
		}
	}
	leases := make([]engine.ClusterLease, len(x.Asks))
	for i := range x.Asks {
		if known[i] {
			leases[i], granted = granted[0], granted[1:]
		} else {
			leases[i] = engine.ClusterLease{Engines: 1}
		}
	}
	return writeJSON(c, http.StatusOK, wire.AnswerOf(leases))
}

// decodeExchange decodes and validates an exchange; every bad field is
// named in the 422.
func decodeExchange(body []byte) (engine.ClusterExchange, error) {
	var errs []engine.FieldError
	o, err := codec.ParseBody(body, &errs)
	if err != nil {
		return engine.ClusterExchange{}, errNotJSONObject(err)
	}
	var x engine.ClusterExchange
	o.Str("engine", &x.Engine)
	if msg := textProblem(x.Engine, 1, 128); msg != "" {
		o.Fail("engine", msg)
	}
	const rest = ""
	x.Asks = decodeObjects(objectList(o, "asks", maxExchangeItems, rest), "asks", &errs, func(ao *wire.Object) engine.ClusterAsk {
		var a engine.ClusterAsk
		exchangeKey(ao, &a.Key)
		exchangeCount(ao, "threshold", &a.Threshold)
		exchangeCount(ao, "intervalMs", &a.IntervalMs)
		exchangeCount(ao, "want", &a.Want)
		exchangeCount(ao, "charge", &a.Charge)
		exchangeCount(ao, "chargeSpanMs", &a.ChargeSpanMs)
		ao.Bool("next", &a.Next, false)
		ao.Rest(func(string) string { return "" })
		return a
	})
	x.Returns = decodeObjects(objectList(o, "returns", maxExchangeItems, rest), "returns", &errs, func(ro *wire.Object) engine.ClusterReturn {
		var r engine.ClusterReturn
		exchangeKey(ro, &r.Key)
		exchangeCount(ro, "bucket", &r.Bucket)
		exchangeCount(ro, "unused", &r.Unused)
		ro.Rest(func(string) string { return "" })
		return r
	})
	o.Rest(func(string) string { return "" })
	if len(errs) > 0 {
		return engine.ClusterExchange{}, ValidationFailed("the exchange is not valid; nothing was leased or returned; see details", fieldErrors(errs)...)
	}
	return x, nil
}

// exchangeKey reads the required key of an ask or a return: a rule's name.
func exchangeKey(o *wire.Object, dst *string) {
	if !o.Str("key", dst) || !engine.RuleNamePattern.MatchString(*dst) {
		o.Fail("key", "is required: the name of a cluster rule, "+engine.RuleNamePattern.String())
	}
}

// exchangeCount reads an optional whole number of an exchange, 0 to the
// engine's largest threshold.
func exchangeCount(o *wire.Object, name string, dst *int64) {
	if o.Integer(name, dst) && (*dst < 0 || *dst > engine.MaxThreshold) {
		o.Fail(name, fmt.Sprintf("must be between 0 and %d", int64(engine.MaxThreshold)))
	}
}

// status answers the state of the server's cluster rules.
//
//	@Summary		Cluster rules' state
//	@ID				getClusterStatus
//	@Description	Whether the server runs with --redis, and if so whether its scope cluster rules decide on the count shared in Redis (state cluster) or, Redis unreachable, by their clusterFallback (state fallback), since when, and each rule's state: how many engines share it and its fallback threshold.
//	@Tags			rules
//	@Produce		json
//	@Success		200	{object}	ClusterStatus
//	@Failure		401	{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure		403	{object}	ErrorResponse	"an instance token"
//	@Failure		429	{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Security		BearerAuth
//	@Router			/api/v1/cluster [get]
func (h *clusterHandler) status(c *fiber.Ctx) error {
	st := h.engine.ClusterStatus()
	out := ClusterStatus{Enabled: st.Enabled, Rules: []ClusterRuleStatus{}}
	if st.Enabled {
		since := time.UnixMilli(st.SinceMs).UTC()
		out.State, out.Since, out.LastError = string(st.State), &since, st.LastError
	}
	for _, r := range st.Rules {
		out.Rules = append(out.Rules, ClusterRuleStatus{
			Name: r.Rule, Resource: r.Resource, Engines: r.Engines, Fallback: string(r.Fallback),
			FallbackThreshold: r.FallbackThreshold, FallingBack: r.FallingBack,
		})
	}
	return writeJSON(c, http.StatusOK, out)
}
