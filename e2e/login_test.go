package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestLoginAndFirstSteps logs in to a brand-new install: the console asks
// for a login, refuses a wrong password, then shows what to do first.
func TestLoginAndFirstSteps(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeConfig{})
	tb := newTab(t, n.url)

	tb.do("open the console", chromedp.Navigate(n.url+"/"), chromedp.WaitVisible(chromedp.CSS("#login-username")))
	tb.screenshot("login")
	tb.do("log in with a wrong password",
		chromedp.SendKeys(chromedp.CSS("#login-username"), "admin"),
		chromedp.SendKeys(chromedp.CSS("#login-password"), "not the password"),
		chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
	tb.waitText("#login-form [role=alert]", "wrong username or password")

	tb.login()
	tb.waitText("#getting-started", "no rules yet")
	tb.waitText("#whoami", "admin (admin)")
	tb.screenshot("overview-new-install")
}
