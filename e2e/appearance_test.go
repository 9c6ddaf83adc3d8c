package e2e

import (
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
