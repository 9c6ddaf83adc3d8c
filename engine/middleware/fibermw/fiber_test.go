package fibermw_test

import (
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/sluicehq/sluice/engine"
	"github.com/sluicehq/sluice/engine/middleware/fibermw"
	"github.com/sluicehq/sluice/engine/middleware/internal/guardtest"
)

// serveFiber serves app on a loopback listener until the test ends and
// returns its base URL.
func serveFiber(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	t.Cleanup(func() {
		if err := app.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Listener: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func TestGuard(t *testing.T) {
	type request struct {
		method, path string
		wantStatus   int
	}
	tests := []struct {
		name  string
		rules []engine.FlowRule
		opts  []fibermw.Option
		// router guards the /api routes with Router instead of
		// route by route.
		router      bool
		requests    []request
		want        map[string]guardtest.Stats
		wantMessage string
		wantClockMs int64
	}{
		{
			name:     "the route pattern names the resource",
			requests: []request{{"GET", "/api/orders/1", 200}, {"GET", "/api/orders/2", 200}, {"HEAD", "/api/orders/3", 200}},
			want: map[string]guardtest.Stats{
				"GET /api/orders/:id":  {Pass: 2, Complete: 2},
				"HEAD /api/orders/:id": {Pass: 1, Complete: 1},
				"GET /api/orders/1":    {},
			},
		},
		{
			name:   "a guarded router names its routes alike",
			router: true,
			requests: []request{
				{"GET", "/api/orders/1", 200}, {"GET", "/api/orders/2", 200},
				{"POST", "/api/orders", 201}, {"GET", "/api/v2/items/7", 200}, {"GET", "/api/health", 200},
			},
			want: map[string]guardtest.Stats{
				"GET /api/orders/:id":   {Pass: 2, Complete: 2},
				"POST /api/orders":      {Pass: 1, Complete: 1},
				"GET /api/v2/items/:id": {Pass: 1, Complete: 1},
				"GET /api/health":       {},
				"GET /api":              {},
			},
		},
		{
			name:        "a blocked request is answered 429, naming no rule",
			router:      true,
			rules:       []engine.FlowRule{{Name: "orders-qps", Resource: "GET /api/orders/:id", Threshold: 1}},
			requests:    []request{{"GET", "/api/orders/1", 200}, {"GET", "/api/orders/2", 429}},
			want:        map[string]guardtest.Stats{"GET /api/orders/:id": {Pass: 1, Block: 1, Complete: 1}},
			wantMessage: "too many requests",
		},
		{
			name:        "with details, the block answer names the rule",
			router:      true,
			rules:       []engine.FlowRule{{Name: "orders-qps", Resource: "GET /api/orders/:id", Threshold: 0}},
			opts:        []fibermw.Option{fibermw.WithBlockDetails()},
			requests:    []request{{"GET", "/api/orders/1", 429}},
			want:        map[string]guardtest.Stats{"GET /api/orders/:id": {Block: 1}},
			wantMessage: "too many requests: blocked by flow rule orders-qps",
		},
		{
			name: "5xx answers and errors count as errors, 4xx do not",
			requests: []request{
				{"GET", "/api/fail/503", 503}, {"GET", "/api/fail/500", 500}, {"GET", "/api/fail/plain", 500},
				{"GET", "/api/fail/404", 404}, {"GET", "/api/fail/400", 400},
			},
			want: map[string]guardtest.Stats{"GET /api/fail/:how": {Pass: 5, Complete: 5, Errors: 3}},
		},
		{
			name:        "the response time is recorded",
			requests:    []request{{"GET", "/api/slow/40", 200}, {"GET", "/api/slow/20", 200}},
			want:        map[string]guardtest.Stats{"GET /api/slow/:ms": {Pass: 2, Complete: 2, AvgRtMs: 30}},
			wantClockMs: 60,
		},
		{
			name: "a throttled request waits its turn",
			rules: []engine.FlowRule{{
				Resource: "GET /api/orders/:id", Threshold: 10,
				ControlBehavior: engine.BehaviorThrottling, MaxQueueingTimeMs: 500,
			}},
			requests:    []request{{"GET", "/api/orders/1", 200}, {"GET", "/api/orders/2", 200}, {"GET", "/api/orders/3", 200}},
			want:        map[string]guardtest.Stats{"GET /api/orders/:id": {Pass: 3, Complete: 3}},
			wantClockMs: 200,
		},
		{
			name: "a resource function names the resource",
			opts: []fibermw.Option{fibermw.WithResource(func(c *fiber.Ctx) string {
				if c.Params("id") != "" {
					return "orders"
				}
				return ""
			})},
			requests: []request{{"GET", "/api/orders/1", 200}, {"GET", "/api/slow/0", 200}},
			want:     map[string]guardtest.Stats{"orders": {Pass: 1, Complete: 1}, "GET /api/slow/:ms": {}},
		},
		{
			name:  "a block answer of one's own",
			rules: []engine.FlowRule{{Resource: "GET /api/orders/:id", Threshold: 0}},
			opts: []fibermw.Option{fibermw.WithBlocked(func(_ *fiber.Ctx, blk *engine.BlockError) error {
				return fiber.NewError(fiber.StatusServiceUnavailable, string(blk.Reason()))
			})},
			requests: []request{{"GET", "/api/orders/1", 503}},
			want:     map[string]guardtest.Stats{"GET /api/orders/:id": {Block: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, clock := guardtest.NewEngine(t, tt.rules...)
			start := clock.NowMs()
			guard := fibermw.Guard(eng, tt.opts...)
			app := fiber.New(fiber.Config{DisableStartupMessage: true})
			api := app.Group("/api")
			api.Get("/health", func(c *fiber.Ctx) error { return c.SendString("ok") })
			var guarded fiber.Router = api
			with := func(h fiber.Handler) []fiber.Handler { return []fiber.Handler{guard, h} }
			if tt.router {
				guarded = fibermw.Router(api, guard)
				with = func(h fiber.Handler) []fiber.Handler { return []fiber.Handler{h} }
			}
			guarded.Get("/orders/:id", with(func(c *fiber.Ctx) error { return c.SendString("order " + c.Params("id")) })...)
			guarded.Post("/orders", with(func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusCreated) })...)
			guarded.Get("/fail/:how", with(func(c *fiber.Ctx) error {
				switch c.Params("how") {
				case "503":
					return fiber.NewError(fiber.StatusServiceUnavailable, "down")
				case "500":
					return c.SendStatus(fiber.StatusInternalServerError)
				case "plain":
					return errors.New("plain")
				case "400":
					return c.SendStatus(fiber.StatusBadRequest)
				}
				return fiber.ErrNotFound
			})...)
			guarded.Get("/slow/:ms", with(func(c *fiber.Ctx) error {
				switch c.Params("ms") {
				case "40":
					clock.Advance(40)
				case "20":
					clock.Advance(20)
				}
				return nil
			})...)
			guarded.Group("/v2").Route("/items", func(r fiber.Router) {
				r.Get("/:id", with(func(c *fiber.Ctx) error { return c.SendString(c.Params("id")) })...)
			})
			url := serveFiber(t, app)

			var resp *http.Response
			var body string
			for _, r := range tt.requests {
				resp, body = guardtest.Get(t, r.method, url+r.path)
				if resp.StatusCode != r.wantStatus {
					t.Fatalf("%s %s: status = %d, want %d (%s)", r.method, r.path, resp.StatusCode, r.wantStatus, body)
				}
			}
			if tt.wantMessage != "" {
				guardtest.CheckBlocked(t, resp, body, tt.wantMessage)
			}
			for name, want := range tt.want {
				if got := guardtest.StatsOf(eng, name); got != want {
					t.Errorf("%q: %+v, want %+v", name, got, want)
				}
				if want == (guardtest.Stats{}) && guardtest.ResourceNames(eng)[name] {
					t.Errorf("the engine knows a resource %q", name)
				}
			}
			if moved := clock.NowMs() - start; moved != tt.wantClockMs {
				t.Errorf("the clock moved %d ms, want %d", moved, tt.wantClockMs)
			}
		})
	}
}

func TestGuardPanicIsRecordedAndRaisedAgain(t *testing.T) {
	eng, _ := guardtest.NewEngine(t)
	raised := make(chan any, 1)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(recover.New(recover.Config{
		EnableStackTrace:  true,
		StackTraceHandler: func(_ *fiber.Ctx, p any) { raised <- p },
	}))
	app.Get("/boom", fibermw.Guard(eng), func(*fiber.Ctx) error { panic("boom") })
	url := serveFiber(t, app)

	resp, body := guardtest.Get(t, "GET", url+"/boom")

	if p := <-raised; p != "boom" {
		t.Errorf("the panic seen outside is %v, want boom", p)
	}
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500 (%s)", resp.StatusCode, body)
	}
	if got, want := guardtest.StatsOf(eng, "GET /boom"), (guardtest.Stats{Pass: 1, Complete: 1, Errors: 1}); got != want {
		t.Errorf("GET /boom: %+v, want %+v", got, want)
	}
}

func TestGuardConcurrencyRule(t *testing.T) {
	eng, _ := guardtest.NewEngine(t, engine.FlowRule{
		Name: "report-slots", Resource: "GET /report", Metric: engine.MetricConcurrency, Threshold: 1,
	})
	release := make(chan struct{})
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/report", fibermw.Guard(eng), func(*fiber.Ctx) error {
		<-release
		return nil
	})
	url := serveFiber(t, app)

	first := make(chan int, 1)
	go func() {
		resp, err := guardtest.Client.Get(url + "/report")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	report := eng.Resource("GET /report")
	guardtest.WaitFor(t, "the first request to be in flight", func() bool { return report.Concurrency() == 1 })

	resp, body := guardtest.Get(t, "GET", url+"/report")
	guardtest.CheckBlocked(t, resp, body, "too many requests")

	close(release)
	if status := <-first; status != http.StatusOK {
		t.Errorf("the first request: status %d, want 200", status)
	}
	if n := report.Concurrency(); n != 0 {
		t.Errorf("concurrency after both = %d, want 0", n)
	}
}
