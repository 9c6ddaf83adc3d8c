package e2e

import (
	"strconv"
	"testing"
)

// TestDarkModeAndFavicon checks that the console follows the system's
// colour scheme (the page, its tables, its inputs, badges and banners change
// colour) and that the favicon the page links is served.
func TestDarkModeAndFavicon(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{demo: true})
	tb := newTab(t, n.url)
	tb.login()
	tb.visit("/rules", "Rules")
	tb.waitText(`tr[data-rule="demo-orders-qps"]`, "demo")

	const colours = `JSON.stringify(['html', '.card, main table', '#demo-banner', '.badge.info', 'input'].map((sel) => {
		const style = getComputedStyle(document.querySelector(sel));
		return [style.backgroundColor, style.color];
	}))`
	tb.colorScheme("light")
	light, err := eval[string](tb, colours)
	if err != nil {
		t.Fatal(err)
	}
	tb.colorScheme("dark")
	tb.waitFor("the dark scheme", `matchMedia('(prefers-color-scheme: dark)').matches`)
	dark, err := eval[string](tb, colours)
	if err != nil {
		t.Fatal(err)
	}
	if light == dark {
		t.Fatalf("the same colours in light and dark: %s", light)
	}
	t.Logf("light %s; dark %s", light, dark)
	if got := tb.text("main h1"); got != "Rules" {
		t.Fatalf("heading = %q after the scheme changed", got)
	}

	tb.waitFor("the favicon linked and served", `(() => {
		const link = document.querySelector('link[rel=icon]');
		if (!link) return false;
		if (!window.faviconCheck) {
			window.faviconCheck = fetch(link.href).then(async (r) =>
				r.ok && r.headers.get('Content-Type').startsWith('image/svg+xml') && (await r.text()).includes('<svg'));
			window.faviconCheck.then((ok) => { window.faviconOK = ok; });
		}
		return window.faviconOK === true;
	})()`)
}

// axisContrast is the contrast ratio, against the chart's ground, of the
// most contrasting pixel the live chart's canvas draws in its left axis
// (tick values and title): axe cannot read a canvas, so the test does.
const axisContrast = `(() => {
	const canvas = document.querySelector('#live-chart canvas');
	if (!canvas || !canvas.width) return 0;
	let el = canvas, ground = null;
	while (el && !ground) {
		const bg = getComputedStyle(el).backgroundColor;
		const m = bg.match(/[\d.]+/g)?.map(Number);
		if (m && (m.length < 4 || m[3] > 0)) ground = m.slice(0, 3);
		el = el.parentElement;
	}
	ground ??= [255, 255, 255];
	const lum = (rgb) => {
		const [r, g, b] = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
		return 0.2126 * r + 0.7152 * g + 0.0722 * b;
	};
	const groundLum = lum(ground);
	const ratio = (rgb) => { const a = lum(rgb), b = groundLum; return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); };
	const axisWidth = Math.round(56 * devicePixelRatio);
	const data = canvas.getContext('2d').getImageData(0, 0, axisWidth, canvas.height).data;
	let best = 1;
	for (let i = 0; i < data.length; i += 4) {
		const a = data[i + 3] / 255;
		if (a < 0.9) continue;
		const rgb = [0, 1, 2].map((c) => data[i + c] * a + ground[c] * (1 - a));
		best = Math.max(best, ratio(rgb));
	}
	return best;
})()`

// TestChartContrast loads a resource's charts in the dark scheme, then
// switches to light and back: in each, the axis text on the canvas stands
// out from the chart's ground by at least 4.5:1 (WCAG AA).
func TestChartContrast(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	n.createRule(t, `{"name": "orders-qps", "kind": "flow", "resource": "GET:/api/orders", "threshold": 50}`)
	tb := newTab(t, n.url)
	tb.colorScheme("dark")
	tb.login()
	tb.visit("/resources/"+"GET%3A%2Fapi%2Forders", "GET:/api/orders")
	for _, scheme := range []string{"dark", "light", "dark"} {
		tb.colorScheme(scheme)
		tb.waitFor("the "+scheme+" scheme", `matchMedia('(prefers-color-scheme: dark)').matches === `+strconv.FormatBool(scheme == "dark"))
		tb.waitFor("axis text of 4.5:1 at least in the "+scheme+" scheme", axisContrast+` >= 4.5`)
		got, err := eval[float64](tb, axisContrast)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: axis text at %.1f:1", scheme, got)
	}
}
