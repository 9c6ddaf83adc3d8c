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
