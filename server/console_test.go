package server

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestConsoleSecurityPolicy checks that the console's files carry a
// Content-Security-Policy that forbids inline scripts, and that the Swagger
// UI (whose page runs inline scripts) and the API are served without it.
func TestConsoleSecurityPolicy(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	tests := []struct {
		path            string
		wantCSP         bool
		wantContentType string
	}{
		{path: "/", wantCSP: true, wantContentType: "text/html"},
		{path: "/index.html", wantCSP: true, wantContentType: "text/html"},
		{path: "/js/app.js", wantCSP: true, wantContentType: "text/javascript"},
		{path: "/vendor/uplot/uPlot.esm.js", wantCSP: true, wantContentType: "text/javascript"},
		{path: "/console.css", wantCSP: true, wantContentType: "text/css"},
		{path: "/swagger/index.html", wantCSP: false, wantContentType: "text/html"},
		{path: "/api/v1/health", wantCSP: false, wantContentType: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := ts.DoWith(t, http.MethodGet, tt.path, nil, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200: %s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.wantContentType) {
				t.Errorf("Content-Type = %q, want %s", ct, tt.wantContentType)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			if !tt.wantCSP {
				if csp != "" {
					t.Errorf("Content-Security-Policy = %q, want none", csp)
				}
				return
			}
			if csp != consoleCSP {
				t.Errorf("Content-Security-Policy = %q, want %q", csp, consoleCSP)
			}
			for _, want := range []string{"script-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy lacks %q", want)
				}
			}
			for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*"} {
				if strings.Contains(csp, bad) {
					t.Errorf("Content-Security-Policy allows %q", bad)
				}
			}
		})
	}
}

// TestConsolePageHasNoInlineScript checks the page the policy protects: a
// script without src, or an event handler attribute, would be refused by
// the browser.
func TestConsolePageHasNoInlineScript(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	_, body := ts.DoWith(t, http.MethodGet, "/", nil, nil)
	page := string(body)
	for _, tag := range regexp.MustCompile(`(?i)<script[^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(tag, "src=") {
			t.Errorf("inline script: %s", tag)
		}
	}
	if handler := regexp.MustCompile(`(?i)\son[a-z]+\s*=`).FindString(page); handler != "" {
		t.Errorf("inline event handler: %q", handler)
	}
	if style := regexp.MustCompile(`(?i)<style|\sstyle\s*=`).FindString(page); style != "" {
		t.Errorf("inline style (refused by style-src 'self'): %q", style)
	}
}

// TestConsoleStaticCompressedAndRevalidated fetches the console's files
// over a real listener as a browser does: compressed in the encoding asked
// for, with an ETag that the next request's If-None-Match turns into a 304
// without a body.
func TestConsoleStaticCompressedAndRevalidated(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	for _, path := range []string{"/", "/vendor/uplot/uPlot.esm.js", "/js/app.js", "/console.css", "/favicon.svg"} {
		t.Run(path, func(t *testing.T) {
			_, raw := ts.DoWith(t, http.MethodGet, path, nil, http.Header{"Accept-Encoding": {"identity"}})
			for _, encoding := range []string{"br", "gzip"} {
				resp, body := ts.DoWith(t, http.MethodGet, path, nil, http.Header{"Accept-Encoding": {encoding}})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: status = %d, want 200", encoding, resp.StatusCode)
				}
				if got := resp.Header.Get("Content-Encoding"); got != encoding {
					t.Fatalf("%s: Content-Encoding = %q, want %q", encoding, got, encoding)
				}
				if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
					t.Errorf("%s: Vary = %q, want Accept-Encoding: caches must keep the encodings apart", encoding, resp.Header.Get("Vary"))
				}
				if len(body) >= len(raw) {
					t.Errorf("%s: %d bytes on the wire, not less than the file's %d", encoding, len(body), len(raw))
				}
				t.Logf("%s: %d bytes raw, %d with %s", path, len(raw), len(body), encoding)

				tag := resp.Header.Get("ETag")
				if !strings.HasPrefix(tag, `W/"`) {
					t.Fatalf("%s: ETag = %q, want a weak validator", encoding, tag)
				}
				again, empty := ts.DoWith(t, http.MethodGet, path, nil, http.Header{"Accept-Encoding": {encoding}, "If-None-Match": {tag}})
				if again.StatusCode != http.StatusNotModified || len(empty) != 0 {
					t.Errorf("%s: revalidation = %d with %d bytes, want 304 without a body", encoding, again.StatusCode, len(empty))
				}
				if again.Header.Get("Content-Security-Policy") != consoleCSP {
					t.Errorf("%s: the 304 lacks the console's Content-Security-Policy", encoding)
				}
			}
		})
	}
}

// TestConsoleFavicon checks that the page links the favicon and that it is
// served as an SVG image.
func TestConsoleFavicon(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	_, page := ts.DoWith(t, http.MethodGet, "/", nil, nil)
	if !strings.Contains(string(page), `<link rel="icon" href="/favicon.svg" type="image/svg+xml">`) {
		t.Errorf("index.html does not link /favicon.svg")
	}
	resp, body := ts.DoWith(t, http.MethodGet, "/favicon.svg", nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/svg+xml") || !strings.Contains(string(body), "<svg") {
		t.Errorf("GET /favicon.svg = %d %q, want 200 image/svg+xml", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
