// Package e2e holds the console's end-to-end tests: a real server on
// 127.0.0.1 with a real SQLite file, driven through the web console in
// headless Chromium with chromedp. `make test` installs Chromium when it is
// missing; run with -update-screenshots to refresh docs/screenshots.
package e2e
