package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestStalenessStays hangs the server while the console shows an
// instance and then the overview: the banner stays in sight while the page
// scrolls, dates the outage from the server's last answer (not from when
// the console noticed it), relative times keep counting, and the overview
// stops looking live.
func TestStalenessStays(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	status, data := n.call(t, http.MethodPost, "/tokens", `{"name": "shop-fleet", "role": "instance"}`)
	if status != http.StatusCreated {
		t.Fatalf("create the instance token: %d %s", status, data)
	}
	var token struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(data, &token); err != nil {
		t.Fatal(err)
	}
	report := map[string]any{
		"instance": map[string]any{"id": "shop-1", "app": "shop", "hostname": "host-a", "pid": 42, "version": "1.2.3", "rulesRevision": 0},
		"minutes":  []map[string]any{{"resource": "GET:/api/orders", "time": time.Now().UTC().Truncate(time.Minute).Add(-time.Minute).Format(time.RFC3339), "pass": 7}},
	}
	if status, data := n.callAs(t, token.Token, http.MethodPost, "/instances/report", report); status != http.StatusNoContent {
		t.Fatalf("report: %d %s", status, data)
	}

	tb := newTab(t, n.url)
	tb.shortTimeouts()
	tb.login()
	tb.do("a short window", chromedp.EmulateViewport(1280, 300))
	tb.waitText("#live-status", "live")
	tb.visit("/instances", "Instances")
	tb.waitText(`tr[data-instance="shop-1"]`, "s ago")

	held := tb.hold(n)
	tb.waitFor("the banner", bannerShown)
	since, err := eval[float64](tb, `Date.parse(document.querySelector('#connection-banner time').dateTime)`)
	if err != nil {
		t.Fatal(err)
	}
	if since > held {
		t.Fatalf("the banner dates the outage from %v, after the server stopped answering at %v", time.UnixMilli(int64(since)), time.UnixMilli(int64(held)))
	}
	// The last report was seen before the hang: its age keeps growing.
	agoSecs := func() int {
		text := tb.text(`tr[data-instance="shop-1"] time[data-ago]`)
		n, err := strconv.Atoi(strings.TrimSuffix(text, " s ago"))
		if err != nil {
			t.Fatalf("the instance was last seen %q, want seconds ago", text)
		}
		return n
	}
	first := agoSecs()
	tb.waitFor("the time ticking", `(() => {
		const s = Number.parseInt(document.querySelector('tr[data-instance="shop-1"] time[data-ago]').textContent, 10);
		return s >= `+strconv.Itoa(first+2)+`;
	})()`)
	if _, err := eval[bool](tb, `window.scrollTo(0, document.body.scrollHeight), true`); err != nil {
		t.Fatal(err)
	}
	tb.waitFor("the page scrolled with the banner still at the top", `window.scrollY > 0 &&
		Math.abs(document.querySelector('#connection-banner').getBoundingClientRect().top) < 1`)
	n.gate.release()
	tb.waitFor("the banner gone", `document.querySelector('#connection-banner').hidden`)

	tb.visit("/", "Overview")
	tb.waitFor("the overview live", `!document.querySelector('.overview-table').classList.contains('stale') && document.querySelector('#overview-stale').hidden`)
	tb.hold(n)
	tb.waitFor("the banner", bannerShown)
	tb.waitFor("the overview not live", `document.querySelector('.overview-table').classList.contains('stale') &&
		document.querySelector('#overview-stale').textContent.includes('Not live')`)
	tb.checkAccessibility("the stale overview")
	n.gate.release()
	tb.waitFor("the overview live again", `!document.querySelector('.overview-table')?.classList.contains('stale')`)
}

// hold hangs n's server and answers the page's clock, in milliseconds,
// once it is hung: the last answer the page got came no later.
func (tb *tab) hold(n *node) float64 {
	tb.t.Helper()
	n.gate.hold()
	now, err := eval[float64](tb, `Date.now()`)
	if err != nil {
		tb.t.Fatal(err)
	}
	return now
}
