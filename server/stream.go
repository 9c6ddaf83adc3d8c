package server

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/server/codec"
	"github.com/sluicehq/sluice/server/metrics"
	"github.com/sluicehq/sluice/store"
)

// streamInterval is how often the stream sends the last second's figures.
const streamInterval = time.Second

// StreamStats is the data of one "stats" event of the metric stream.
type StreamStats struct {
	Time      time.Time        `json:"time" format:"date-time"`
	Resources []StreamResource `json:"resources"`
}

// StreamResource is one resource's traffic over the last second.
type StreamResource struct {
	Name string `json:"name" example:"GET:/api/orders"`
	LiveStats
}

// StreamEvents documents the events of the metric stream, which is no one
// JSON document: each property is an event's name and its schema the data
// that event carries, so that the Swagger document names them all.
type StreamEvents struct {
	Backlog StreamBacklog `json:"backlog" validate:"optional"`
	Stats   StreamStats   `json:"stats" validate:"optional"`
	Breaker BreakerEvent  `json:"breaker" validate:"optional"`
}

// StreamBacklog is the data of the "backlog" event that opens the metric
// stream: the last five minutes of per-second figures, one value a second
// from From, so that a chart is full from its first paint. A value is null
// for a second the server did not sample (it was down or stalled): a gap,
// not an idle second; avgRtMs is also null for a second in which no call
// completed.
type StreamBacklog struct {
	// From is the first second; To is the last, the newest sampled.
	From      time.Time               `json:"from" format:"date-time"`
	To        time.Time               `json:"to" format:"date-time"`
	StepMs    int                     `json:"stepMs" example:"1000"`
	Resources []StreamBacklogResource `json:"resources"`
}

// StreamBacklogResource is one resource's seconds in a StreamBacklog; NaN
// in a series goes out as null.
type StreamBacklogResource struct {
	Name           string    `json:"name" example:"GET:/api/orders"`
	PassQps        []float64 `json:"passQps" extensions:"x-nullable"`
	BlockQps       []float64 `json:"blockQps" extensions:"x-nullable"`
	ShadowBlockQps []float64 `json:"shadowBlockQps" extensions:"x-nullable"`
	AvgRtMs        []float64 `json:"avgRtMs" extensions:"x-nullable"`
	Concurrency    []float64 `json:"concurrency" extensions:"x-nullable"`
}

// streamBacklogResources is the most resources the backlog event of a
// stream of every resource holds, the busiest: the console lists 200 at
// once, and a stream of one resource always has its own.
const streamBacklogResources = 1000

// streamHub reads every resource's live figures once an interval, while
// anyone listens, and hands them to every listener. A listener whose
// client is gone is dropped at its next write.
type streamHub struct {
	metrics  *metrics.Pipeline
	interval time.Duration

	mu       sync.Mutex
	subs     map[*streamSub]struct{}
	stopTick chan struct{} // closed when the last listener leaves
	closed   bool
	done     chan struct{} // closed by close
	ticking  sync.WaitGroup
}

// streamSub is one listener: the resource it asked for ("" for all), the
// frames and the breaker events waiting for it.
type streamSub struct {
	resource string
	frames   chan *streamFrame
	breakers chan []byte
}

// subBreakerEvents is how many breaker events may wait for one listener;
// a listener that far behind misses the newest.
const subBreakerEvents = 64

// streamFrame is one interval's figures, shared by every listener.
type streamFrame struct {
	stats StreamStats
	// all is stats as JSON, encoded once for every listener of all
	// resources.
	all []byte
}

func newStreamHub(m *metrics.Pipeline, interval time.Duration) *streamHub {
	return &streamHub{metrics: m, interval: interval, subs: map[*streamSub]struct{}{}, done: make(chan struct{})}
}

// subscribe adds a listener; false once the hub is closed.
func (h *streamHub) subscribe(resource string) (*streamSub, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	sub := &streamSub{resource: resource, frames: make(chan *streamFrame, 1), breakers: make(chan []byte, subBreakerEvents)}
	h.subs[sub] = struct{}{}
	if h.stopTick == nil {
		h.stopTick = make(chan struct{})
		stop := h.stopTick
		h.ticking.Go(func() { h.tick(stop) })
	}
	return sub, true
}

// unsubscribe removes a listener, and stops reading figures when it was
// the last.
func (h *streamHub) unsubscribe(sub *streamSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, sub)
	if len(h.subs) == 0 && h.stopTick != nil {
		close(h.stopTick)
		h.stopTick = nil
	}
}

// subscribers counts the listeners.
func (h *streamHub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// close ends every stream, so that a shutdown does not wait on them.
func (h *streamHub) close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.done)
		if h.stopTick != nil {
			close(h.stopTick)
			h.stopTick = nil
		}
	}
	h.mu.Unlock()
	h.ticking.Wait()
}

// relayBreakerBatch is the most transitions stored in one write: a
// breaker storm is written in few transactions, and the stream waits for
// none longer than one.
const relayBreakerBatch = 256

// relayBreakers stores every transition of feed and publishes it to the
// webhooks (each in a transaction of its own), then hands it to the
// listeners of its resource, until the hub closes: a console that reads
// the stored transitions when an event comes finds that one among them.
func (h *streamHub) relayBreakers(feed *BreakerFeed, st *store.Store, logger *slog.Logger) {
	h.ticking.Go(func() {
		batch := make([]engine.BreakerStateChange, 0, relayBreakerBatch)
		for {
			select {
			case <-h.done:
				return
			case c := <-feed.changes:
				batch = append(batch[:0], c)
			more:
				for len(batch) < relayBreakerBatch {
					select {
					case c := <-feed.changes:
						batch = append(batch, c)
					default:
						break more
					}
				}
				rows := make([]store.BreakerTransition, len(batch))
				for i, c := range batch {
					rows[i] = store.BreakerTransition{AtMs: c.AtMs, Rule: c.Rule, Resource: c.Resource, From: string(c.From), To: string(c.To)}
				}
				ctx, cancel := context.WithTimeout(context.Background(), breakerWriteTimeout)
				if err := st.AddBreakerTransitions(ctx, rows); err != nil {
					logger.Error("breakers: could not store transitions; the stream still sends them", "transitions", len(rows), "error", err)
				}
				for _, c := range batch {
					if _, err := st.Publish(ctx, breakerAnnouncement(c)); err != nil {
						logger.Error("breakers: could not publish a transition to the webhooks", "resource", c.Resource, "error", err)
					}
				}
				cancel()
				for _, c := range batch {
					h.sendBreaker(c)
				}
			}
		}
	})
}

// breakerWriteTimeout bounds one write of transitions, so that a stuck
// database delays the stream's breaker events by no more.
const breakerWriteTimeout = 5 * time.Second

// sendBreaker hands one transition to the listeners of its resource.
func (h *streamHub) sendBreaker(c engine.BreakerStateChange) {
	data, _ := json.Marshal(breakerEvent(c)) // plain structs always encode
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		if sub.resource != "" && sub.resource != c.Resource {
			continue
		}
		select {
		case sub.breakers <- data:
		default:
		}
	}
}

func (h *streamHub) tick(stop <-chan struct{}) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			frame := h.frame()
			h.mu.Lock()
			for sub := range h.subs {
				select {
				case sub.frames <- frame:
				default: // the listener has not taken the last one yet
				}
			}
			h.mu.Unlock()
		}
	}
}

// frame reads the figures of every resource with traffic or calls in
// flight.
func (h *streamHub) frame() *streamFrame {
	// One allocation each for the figures and their JSON, about 150
	// bytes a resource: a frame may hold 100,000.
	resources := make([]StreamResource, 0, h.metrics.LiveCount())
	atMs := h.metrics.Live(func(name string, l engine.LiveStats) {
		resources = append(resources, StreamResource{Name: name, LiveStats: liveStatsOf(l)})
	})
	stats := StreamStats{Time: time.UnixMilli(atMs).UTC(), Resources: resources}
	all := appendStreamStats(make([]byte, 0, 64+160*len(stats.Resources)), stats)
	return &streamFrame{stats: stats, all: all}
}

// appendStreamStats appends s as encoding/json writes it, without
// reflection: a frame of 100,000 resources is encoded once a second.
func appendStreamStats(b []byte, s StreamStats) []byte {
	b = append(b, `{"time":"`...)
	b = s.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","resources":[`...)
	for i, r := range s.Resources {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = codec.AppendString(b, r.Name)
		for _, f := range []struct {
			key string
			v   float64
		}{
			{`,"passQps":`, r.PassQps}, {`,"blockQps":`, r.BlockQps}, {`,"shadowBlockQps":`, r.ShadowBlockQps},
			{`,"completeQps":`, r.CompleteQps}, {`,"errorQps":`, r.ErrorQps}, {`,"avgRtMs":`, r.AvgRtMs},
		} {
			b = codec.AppendFloat(append(b, f.key...), f.v)
		}
		b = strconv.AppendInt(append(b, `,"concurrency":`...), r.Concurrency, 10)
		if r.AdaptiveLimit != 0 {
			b = strconv.AppendInt(append(b, `,"adaptiveLimit":`...), r.AdaptiveLimit, 10)
		}
		if r.AdaptiveChange != "" {
			b = codec.AppendString(append(b, `,"adaptiveChange":`...), r.AdaptiveChange)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// data is the frame's JSON for sub.
func (f *streamFrame) data(sub *streamSub) []byte {
	if sub.resource == "" {
		return f.all
	}
	one := StreamStats{Time: f.stats.Time, Resources: []StreamResource{}}
	for _, r := range f.stats.Resources {
		if r.Name == sub.resource {
			one.Resources = append(one.Resources, r)
		}
	}
	return appendStreamStats(nil, one)
}

// streamBacklog is the data of a backlog event.
func streamBacklog(b metrics.LiveBacklog) StreamBacklog {
	from := time.Unix(b.FromSec, 0).UTC()
	out := StreamBacklog{From: from, To: from.Add(time.Duration(max(b.Seconds-1, 0)) * time.Second), StepMs: 1000,
		Resources: make([]StreamBacklogResource, len(b.Resources))}
	for i, r := range b.Resources {
		series := func(v func(int) float64) []float64 {
			s := make([]float64, len(r.Sampled))
			for j, sampled := range r.Sampled {
				s[j] = math.NaN()
				if sampled {
					s[j] = v(j)
				}
			}
			return s
		}
		out.Resources[i] = StreamBacklogResource{
			Name:           r.Name,
			PassQps:        series(func(j int) float64 { return float64(r.Pass[j]) }),
			BlockQps:       series(func(j int) float64 { return float64(r.Block[j]) }),
			ShadowBlockQps: series(func(j int) float64 { return float64(r.ShadowBlock[j]) }),
			Concurrency:    series(func(j int) float64 { return float64(r.Concurrency[j]) }),
			AvgRtMs: series(func(j int) float64 {
				if !r.HasRt[j] {
					return math.NaN()
				}
				return float64(r.AvgRtMs[j])
			}),
		}
	}
	return out
}

// appendStreamBacklog appends s as JSON, NaN as null, without
// reflection: it may hold 1,000 resources of 300 seconds.
func appendStreamBacklog(b []byte, s StreamBacklog) []byte {
	b = append(b, `{"from":"`...)
	b = s.From.AppendFormat(b, time.RFC3339)
	b = append(b, `","to":"`...)
	b = s.To.AppendFormat(b, time.RFC3339)
	b = strconv.AppendInt(append(b, `","stepMs":`...), int64(s.StepMs), 10)
	b = append(b, `,"resources":[`...)
	for i, r := range s.Resources {
		if i > 0 {
			b = append(b, ',')
		}
		b = codec.AppendString(append(b, `{"name":`...), r.Name)
		for _, f := range []struct {
			key string
			v   []float64
		}{
			{`,"passQps":[`, r.PassQps}, {`,"blockQps":[`, r.BlockQps}, {`,"shadowBlockQps":[`, r.ShadowBlockQps},
			{`,"avgRtMs":[`, r.AvgRtMs}, {`,"concurrency":[`, r.Concurrency},
		} {
			b = append(b, f.key...)
			for j, v := range f.v {
				if j > 0 {
					b = append(b, ',')
				}
				if math.IsNaN(v) {
					b = append(b, "null"...)
				} else {
					b = codec.AppendFloat(b, v)
				}
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// writeEvent writes one event and sends it.
func writeEvent(w *bufio.Writer, event string, data []byte) error {
	w.WriteString("event: " + event + "\ndata: ")
	w.Write(data)
	w.WriteString("\n\n")
	return w.Flush()
}

// streamStats streams the live figures as Server-Sent Events.
//
//	@Summary		Live figures as Server-Sent Events
//	@ID				streamMetrics
//	@Description	First an "event: backlog" whose data is a StreamBacklog: the last five minutes of per-second figures (of the 1,000 busiest resources, or of the one named by resource), null where the server did not sample. Then once a second an "event: stats" whose data is a StreamStats: the last second's figures of every resource with traffic, calls in flight or an adaptive concurrency rule (its limit and latest change), or only of the one named by resource. A circuit breaker that changes state sends an "event: breaker" whose data is a BreakerEvent. Works with a bearer token and with the console's session cookie (EventSource).
//	@Tags			metrics
//	@Produce		text/event-stream
//	@Param			resource	query		string			false	"only this resource (exact name)"
//	@Success		200			{object}	StreamEvents	"a stream of events: backlog, then stats and breaker; each event's data is the property of its name"
//	@Failure		401			{object}	ErrorResponse	"no credentials, or a wrong, expired or revoked one"
//	@Failure	403	{object}	ErrorResponse	"an instance token (role instance), which may call only GET /api/v1/rules/snapshot, POST /api/v1/instances/report and POST /api/v1/cluster/exchange"
//	@Failure		429			{object}	ErrorResponse	"a rule on the API's own routes blocked the call (never an admin's); see Retry-After"
//	@Header		429	{integer}	Retry-After	"seconds until the call may be made again"
//	@Failure		503			{object}	ErrorResponse	"the server is shutting down"
//	@Security		BearerAuth
//	@Router			/api/v1/metrics/stream [get]
func (h *metricsHandler) streamStats(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderConnection, "keep-alive")
	c.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	// HEAD answers the headers alone: a streamed body, even one left
	// unsent, would put the end of a chunked body on the connection.
	if c.Method() == http.MethodHead {
		return nil
	}
	sub, ok := h.stream.subscribe(c.Query("resource"))
	if !ok {
		return NewError(fiber.StatusServiceUnavailable, "the server is shutting down")
	}
	hub := h.stream
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer hub.unsubscribe(sub)
		// The headers go out at once; a retry hint for EventSource.
		if _, err := w.WriteString("retry: 2000\n\n"); err != nil || w.Flush() != nil {
			return
		}
		backlog := streamBacklog(h.metrics.Backlog().Read(sub.resource, streamBacklogResources))
		if writeEvent(w, "backlog", appendStreamBacklog(nil, backlog)) != nil {
			return
		}
		for {
			select {
			case <-hub.done:
				return
			case frame := <-sub.frames:
				if writeEvent(w, "stats", frame.data(sub)) != nil {
					return // the client is gone
				}
			case data := <-sub.breakers:
				if writeEvent(w, "breaker", data) != nil {
					return
				}
			}
		}
	})
	return nil
}
