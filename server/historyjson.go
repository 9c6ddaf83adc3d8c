package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/metrics"
)

// MetricHistory is one resource's traffic over a range, step by step.
type MetricHistory struct {
	Resource string `json:"resource" example:"GET:/api/orders"`
	Step     string `json:"step" example:"1m"`
	// From and To are the range answered, rounded out to the step.
	From time.Time `json:"from" format:"date-time"`
	To   time.Time `json:"to" format:"date-time"`
	// Points has one point per step with traffic, oldest first.
	Points []MetricPoint `json:"points"`
	// Covered are the spans of the range, oldest first, made of whole
	// steps in which a Sluice server was up (in at least one minute of
	// the step): a step there without a point had no traffic; a step
	// outside them without a point is unknown (the server was down, or
	// the minute is older than Sluice's heartbeats).
	Covered []CoveredSpan `json:"covered"`
}

// CoveredSpan is a span of a history in which a server was up, from
// inclusive, to exclusive, both on the step.
type CoveredSpan struct {
	From time.Time `json:"from" format:"date-time"`
	To   time.Time `json:"to" format:"date-time"`
}

// coveredSpans merges the covered steps, oldest first, into spans.
func coveredSpans(startsMs []int64, stepMs int64) []CoveredSpan {
	spans := []CoveredSpan{}
	for _, ms := range startsMs {
		from, to := time.UnixMilli(ms).UTC(), time.UnixMilli(ms+stepMs).UTC()
		if n := len(spans); n > 0 && spans[n-1].To.Equal(from) {
			spans[n-1].To = to
			continue
		}
		spans = append(spans, CoveredSpan{From: from, To: to})
	}
	return spans
}

// MetricPoint is a resource's traffic in the step that starts at Time.
type MetricPoint struct {
	Time time.Time `json:"time" format:"date-time"`
	Calls
	// AvgRtMs is the mean response time of the completed calls, 0 if none.
	AvgRtMs float64 `json:"avgRtMs" example:"12.5" format:"double"`
	// MinRtMs and MaxRtMs are the fastest and slowest completed calls, 0
	// if none.
	MinRtMs int64 `json:"minRtMs" example:"2"`
	MaxRtMs int64 `json:"maxRtMs" example:"340"`
	// MaxConcurrency is the most calls in flight at once.
	MaxConcurrency int64 `json:"maxConcurrency" example:"9"`
	// BusiestSecond is the most calls, passed or blocked, that one engine
	// (the server or an instance) saw in one second of the step: a
	// second counts in the minute it ends in; the step's is its minutes'
	// largest. It is 0 in rows written before Sluice kept it.
	BusiestSecond int64 `json:"busiestSecond" example:"41"`
	// AdaptiveLimitMin, AdaptiveLimitMax and AdaptiveLimitLast are the
	// least, greatest and latest limit of the resource's adaptive
	// concurrency rule in the step (the latest: of its latest minute that
	// had one); 0 when it had none.
	AdaptiveLimitMin  int64 `json:"adaptiveLimitMin" example:"80"`
	AdaptiveLimitMax  int64 `json:"adaptiveLimitMax" example:"120"`
	AdaptiveLimitLast int64 `json:"adaptiveLimitLast" example:"96"`
	// BlockedBy splits block by the rule that blocked and its kind, by
	// reason then rule: its entries sum to block. Absent when nothing
	// was blocked, in rows written before Sluice kept it, and in an
	// instance's own history (?instance=).
	BlockedBy []RuleBlocks `json:"blockedBy,omitempty"`
}

// writeHistory answers h, the history q asked for, as writeJSON would
// answer historyOf(q, h), byte for byte (a test holds the two equal),
// without reflection: a day of minutes is 1,440 points, and
// encoding/json spent a third of the answer's server time on them.
func writeHistory(c *fiber.Ctx, q metrics.HistoryQuery, h metrics.History) error {
	answer := historyOf(q, h)
	body := appendHistoryJSON(make([]byte, 0, 64+200*len(answer.Points)), answer)
	c.Status(http.StatusOK).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(body)
}

// historyOf is h, the history q asked for, as the API answers it.
func historyOf(q metrics.HistoryQuery, h metrics.History) MetricHistory {
	points := make([]MetricPoint, len(h.Points))
	for i, p := range h.Points {
		points[i] = MetricPoint{
			Time: time.UnixMilli(p.StartMs).UTC(), Calls: callsOf(p.Calls), AvgRtMs: p.AvgRtMs(),
			MinRtMs: p.MinRtMs, MaxRtMs: p.MaxRtMs, MaxConcurrency: p.MaxConcurrency,
			BusiestSecond: p.BusiestSecond, AdaptiveLimitMin: p.AdaptiveLimitMin, AdaptiveLimitMax: p.AdaptiveLimitMax,
			AdaptiveLimitLast: p.AdaptiveLimitLast, BlockedBy: ruleBlocksOf(p.BlockedBy),
		}
	}
	return MetricHistory{
		Resource: q.Resource, Step: q.Step.Name,
		From: time.UnixMilli(h.FromMs).UTC(), To: time.UnixMilli(h.ToMs).UTC(),
		Points: points, Covered: coveredSpans(h.CoveredMs, q.Step.Ms),
	}
}

// appendHistoryJSON appends h as marshalJSON encodes it.
func appendHistoryJSON(b []byte, h MetricHistory) []byte {
	b = codec.AppendString(append(b, `{"resource":`...), h.Resource)
	b = codec.AppendString(append(b, `,"step":`...), h.Step)
	b = codec.AppendTime(append(b, `,"from":`...), h.From)
	b = codec.AppendTime(append(b, `,"to":`...), h.To)
	b = append(b, `,"points":[`...)
	for i, p := range h.Points {
		if i > 0 {
			b = append(b, ',')
		}
		b = codec.AppendTime(append(b, `{"time":`...), p.Time)
		b = strconv.AppendInt(append(b, `,"pass":`...), p.Pass, 10)
		b = strconv.AppendInt(append(b, `,"block":`...), p.Block, 10)
		b = strconv.AppendInt(append(b, `,"shadowBlock":`...), p.ShadowBlock, 10)
		b = strconv.AppendInt(append(b, `,"complete":`...), p.Complete, 10)
		b = strconv.AppendInt(append(b, `,"error":`...), p.Error, 10)
		b = codec.AppendFloat(append(b, `,"avgRtMs":`...), p.AvgRtMs)
		b = strconv.AppendInt(append(b, `,"minRtMs":`...), p.MinRtMs, 10)
		b = strconv.AppendInt(append(b, `,"maxRtMs":`...), p.MaxRtMs, 10)
		b = strconv.AppendInt(append(b, `,"maxConcurrency":`...), p.MaxConcurrency, 10)
		b = strconv.AppendInt(append(b, `,"busiestSecond":`...), p.BusiestSecond, 10)
		b = strconv.AppendInt(append(b, `,"adaptiveLimitMin":`...), p.AdaptiveLimitMin, 10)
		b = strconv.AppendInt(append(b, `,"adaptiveLimitMax":`...), p.AdaptiveLimitMax, 10)
		b = strconv.AppendInt(append(b, `,"adaptiveLimitLast":`...), p.AdaptiveLimitLast, 10)
		if len(p.BlockedBy) > 0 {
			b = append(b, `,"blockedBy":[`...)
			for j, rb := range p.BlockedBy {
				if j > 0 {
					b = append(b, ',')
				}
				b = codec.AppendString(append(b, `{"reason":`...), rb.Reason)
				b = codec.AppendString(append(b, `,"rule":`...), rb.Rule)
				b = strconv.AppendInt(append(b, `,"blocked":`...), rb.Blocked, 10)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"covered":[`...)
	for i, c := range h.Covered {
		if i > 0 {
			b = append(b, ',')
		}
		b = codec.AppendTime(append(b, `{"from":`...), c.From)
		b = codec.AppendTime(append(b, `,"to":`...), c.To)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
