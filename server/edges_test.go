package server

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/servertest"
)

// TestPathIDsHaveOneSpelling checks that an id in a path is decimal
// without a sign or a leading zero: any other spelling of a record's id
// is 400 naming id, never that record (docs/api.md: a path has one spelling).
func TestPathIDsHaveOneSpelling(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	rule := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"r","threshold":10}`)
	resp, body := ts.call(t, http.MethodPost, "/api/v1/users", `{"username":"ann","role":"viewer","password":"a long enough password"}`, nil)
	mustStatus(t, resp, body, http.StatusCreated)
	user := decodeStrict[User](t, body)
	rid, uid := strconv.FormatInt(rule.ID, 10), strconv.FormatInt(user.ID, 10)
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, rulesPath + "/0" + rid},
		{http.MethodGet, rulesPath + "/+" + rid},
		{http.MethodGet, rulesPath + "/000" + rid + "/revisions"},
		{http.MethodPatch, rulesPath + "/0" + rid},
		{http.MethodDelete, rulesPath + "/+" + rid},
		{http.MethodPost, rulesPath + "/0" + rid + "/rollback?toVersion=1"},
		{http.MethodGet, "/api/v1/users/0" + uid},
		{http.MethodGet, "/api/v1/users/+" + uid},
		{http.MethodDelete, "/api/v1/users/0" + uid},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var reqBody any
			if tc.method == http.MethodPatch {
				reqBody = `{"threshold":20}`
			}
			resp, body := ts.call(t, tc.method, tc.path, reqBody, nil)
			wantError(t, resp, body, http.StatusBadRequest, "bad_request", "id")
		})
	}
	if got, _ := ts.getRule(t, rule.ID); got.Version != 1 {
		t.Errorf("rule version = %d after the refused writes, want 1", got.Version)
	}
	resp, body = ts.call(t, http.MethodGet, "/api/v1/users/"+uid, nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
}

// TestFreeTextFiltersRefuseControlCharacters checks that every list's
// free-text filter holding a control character is 400 naming it: a NUL
// in ?q= made the LIKE pattern match every rule and resource.
func TestFreeTextFiltersRefuseControlCharacters(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name":"orders","kind":"flow","resource":"r","threshold":10}`)
	for _, tc := range []struct{ path, field string }{
		{rulesPath + "?q=%00zzzz", "q"},
		{rulesPath + "?q=ord%07", "q"},
		{"/api/v1/resources?q=%00", "q"},
		{"/api/v1/resources?q=r%7F", "q"},
		{"/api/v1/resources?q=%C2%85", "q"},
		{"/api/v1/breakers/transitions?resource=%00", "resource"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodGet, tc.path, nil, nil)
			wantError(t, resp, body, http.StatusBadRequest, "bad_request", tc.field)
		})
	}
	if got := ts.listRules(t, "q=zzzz"); got.Total != 0 {
		t.Errorf("q=zzzz total = %d, want 0", got.Total)
	}
}

// TestChangeReasonRefusesControlCharacters checks that an X-Change-Reason
// holding a control character is 400 naming the header, and that the
// write it came with changes nothing.
func TestChangeReasonRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	rule := ts.createRule(t, `{"name":"orders","kind":"flow","resource":"r","threshold":10}`)
	path := ruleURL(rule.ID)
	body := `{"threshold":20}`
	for _, tc := range []struct{ name, reason string }{
		{"a bell", "sale\a"},
		{"a tab", "sale\tnow"},
		{"an escape", "\x1b[31mred"},
		{"a C1 control", "sale\u0085"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := "PATCH " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
				"Authorization: Bearer " + servertest.AdminToken + "\r\n" +
				"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n" +
				"X-Change-Reason: " + tc.reason + "\r\n\r\n" + body
			resp, got := ts.DoRaw(t, head)
			wantError(t, resp, got, http.StatusBadRequest, "bad_request", "X-Change-Reason")
		})
	}
	if got, _ := ts.getRule(t, rule.ID); got.Version != 1 {
		t.Errorf("rule version = %d after the refused writes, want 1", got.Version)
	}
	resp, got := ts.call(t, http.MethodPatch, path, body, reqHeader{"X-Change-Reason": "sale"})
	mustStatus(t, resp, got, http.StatusOK)
}

// TestBadDryRunIsNamedForEveryRole checks that a bad dryRun on apply and
// import is 400 naming it whatever the caller's role, not 403 for a
// viewer and 400 for an editor, and that a viewer still cannot write.
func TestBadDryRunIsNamedForEveryRole(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t)
	viewer, _ := n.newToken(t, "ci-viewer", roleViewer, "")
	editor, _ := n.newToken(t, "ci-editor", roleEditor, "")
	applyBody := `{"rules":[{"name":"orders","kind":"flow","resource":"r","threshold":10}]}`
	importBody := `[{"resource":"r","threshold":10}]`
	for _, tc := range []struct {
		name, token, path, body string
		status                  int
		field                   string
	}{
		{"viewer apply", viewer, "/api/v1/rules/apply?dryRun=yes", applyBody, http.StatusBadRequest, "dryRun"},
		{"editor apply", editor, "/api/v1/rules/apply?dryRun=yes", applyBody, http.StatusBadRequest, "dryRun"},
		{"viewer import", viewer, "/api/v1/rules/import?format=sentinel&dryRun=1x", importBody, http.StatusBadRequest, "dryRun"},
		{"editor import", editor, "/api/v1/rules/import?format=sentinel&dryRun=1x", importBody, http.StatusBadRequest, "dryRun"},
		{"viewer apply without dryRun", viewer, "/api/v1/rules/apply", applyBody, http.StatusForbidden, ""},
		{"viewer import with dryRun=false", viewer, "/api/v1/rules/import?format=sentinel&dryRun=false", importBody, http.StatusForbidden, ""},
		{"viewer apply plan", viewer, "/api/v1/rules/apply?dryRun=true", applyBody, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			header := bearer(tc.token)
			header.Set("Content-Type", "application/json")
			resp, body := n.DoWith(t, http.MethodPost, tc.path, strings.NewReader(tc.body), header)
			switch tc.status {
			case http.StatusBadRequest:
				wantError(t, resp, body, tc.status, "bad_request", tc.field)
			case http.StatusForbidden:
				wantError(t, resp, body, tc.status, "forbidden")
			default:
				mustStatus(t, resp, body, tc.status)
			}
		})
	}
	if got := n.listRules(t, ""); got.Total != 0 {
		t.Errorf("%d rules stored, want none", got.Total)
	}
}

// TestTokenNamesFollowTheUsernameRule checks that a token name is refused
// 422 naming name unless it is one a username may be: no whitespace-only,
// control or invisible characters.
func TestTokenNamesFollowTheUsernameRule(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	for _, tc := range []struct {
		name, tokenName string
		status          int
	}{
		{"whitespace only", "   ", http.StatusUnprocessableEntity},
		{"a zero-width space", "bootstrap\u200b", http.StatusUnprocessableEntity},
		{"a bell", "bell\a", http.StatusUnprocessableEntity},
		{"a NUL", "ci\x00deploy", http.StatusUnprocessableEntity},
		{"an inner space", "ci deploy", http.StatusUnprocessableEntity},
		{"empty", "", http.StatusUnprocessableEntity},
		{"65 characters", strings.Repeat("a", 65), http.StatusUnprocessableEntity},
		{"a leading dot", ".ci", http.StatusUnprocessableEntity},
		{"a plain name", "ci-deploy", http.StatusCreated},
		{"64 characters", strings.Repeat("b", 64), http.StatusCreated},
		{"an address", "ci.bot_1@example.com", http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodPost, "/api/v1/tokens", map[string]string{"name": tc.tokenName, "role": roleViewer}, nil)
			if tc.status == http.StatusCreated {
				mustStatus(t, resp, body, tc.status)
				return
			}
			wantError(t, resp, body, tc.status, "validation_failed", "name")
		})
	}
}

// TestBodyMayBeginWithABOM checks that a JSON (or YAML) body beginning
// with a UTF-8 byte order mark decodes as the same body without it, on
// every body route: RFC 8259 lets a parser ignore the mark.
func TestBodyMayBeginWithABOM(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	const bom = "\xef\xbb\xbf"
	for _, tc := range []struct {
		name, method, path, body string
		header                   reqHeader
		status                   int
	}{
		{"a rule", http.MethodPost, rulesPath, `{"name":"orders","kind":"flow","resource":"r","threshold":10}`, nil, http.StatusCreated},
		{"a patch", http.MethodPatch, rulesPath + "/1", `{"threshold":20}`, nil, http.StatusOK},
		{"an apply", http.MethodPost, applyPath + "?dryRun=true", `{"rules":[]}`, nil, http.StatusOK},
		{"a YAML apply", http.MethodPost, applyPath + "?dryRun=true", "rules: []\n", reqHeader{"Content-Type": "application/yaml"}, http.StatusOK},
		{"an import", http.MethodPost, importPath + "?format=sentinel&dryRun=true", `[{"resource":"r","threshold":1}]`, nil, http.StatusOK},
		{"a check", http.MethodPost, "/api/v1/check", `{"resource":"r"}`, nil, http.StatusOK},
		{"a token", http.MethodPost, "/api/v1/tokens", `{"name":"ci","role":"viewer"}`, nil, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := ts.call(t, tc.method, tc.path, bom+tc.body, tc.header)
			mustStatus(t, resp, body, tc.status)
		})
	}
	if got, _ := ts.getRule(t, 1); got.Name != "orders" || got.Version != 2 {
		t.Errorf("rule 1 = %s version %d, want orders version 2", got.Name, got.Version)
	}
	t.Run("a mark alone in the middle", func(t *testing.T) {
		resp, body := ts.call(t, http.MethodPatch, rulesPath+"/1", ` `+bom+`{"threshold":30}`, nil)
		wantError(t, resp, body, http.StatusBadRequest, "bad_request")
	})
}

// TestHistoryEndStaysWithinRFC3339 checks that a history range whose end,
// rounded up to the step, passes 9999-12-31T23:59:59Z is 400 naming to,
// instead of answering "to": "10000-01-01T00:00:00Z", which is not
// RFC 3339; the last range that fits still answers, and so does a
// ranking up to the last millisecond (it answers no times).
func TestHistoryEndStaysWithinRFC3339(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	ts.createRule(t, `{"name":"res","kind":"flow","resource":"res","threshold":10}`)
	const history = "/api/v1/resources/res/metrics?"
	for _, tc := range []struct {
		query, wantTo string
	}{
		{"from=9999-12-31T23:30:00Z&to=9999-12-31T23:59:59Z&step=1d", ""},
		{"from=9999-12-31T23:30:00Z&to=9999-12-31T23:59:01Z&step=1m", ""},
		{"from=9999-12-31T00:00:00Z&to=9999-12-31T00:00:00.001Z&step=1d", ""},
		{"from=253402300000000&to=253402300799999&step=1h", ""},
		{"from=9999-12-31T23:00:00Z&to=9999-12-31T23:59:00Z&step=1m", "9999-12-31T23:59:00Z"},
		{"from=9999-12-30T00:00:00Z&to=9999-12-31T00:00:00Z&step=1d", "9999-12-31T00:00:00Z"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodGet, history+tc.query, nil, nil)
			if tc.wantTo == "" {
				wantError(t, resp, body, http.StatusBadRequest, "bad_request", "to")
				return
			}
			mustStatus(t, resp, body, http.StatusOK)
			if got := decodeStrict[MetricHistory](t, body).To.UTC().Format(time.RFC3339); got != tc.wantTo {
				t.Errorf("to = %s, want %s", got, tc.wantTo)
			}
		})
	}
	resp, body := ts.call(t, http.MethodGet, "/api/v1/metrics/top?from=9999-12-31T23:30:00Z&to=9999-12-31T23:59:59.999Z", nil, nil)
	mustStatus(t, resp, body, http.StatusOK)
}

// TestHistoryOfAResourceAsTheListHasIt checks that a resource's history
// is 404 exactly when the resource list does not hold it: a resource a
// deleted rule named, with no traffic ever, is neither listed nor 200;
// one a rule names, or one with traffic, is both.
func TestHistoryOfAResourceAsTheListHasIt(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil, nil)
	gone := ts.createRule(t, `{"name":"gone","kind":"flow","resource":"gone","threshold":10}`)
	resp, body := ts.call(t, http.MethodDelete, ruleURL(gone.ID), nil, nil)
	mustStatus(t, resp, body, http.StatusNoContent)
	ts.createRule(t, `{"name":"idle","kind":"flow","resource":"idle","threshold":10}`)
	traffic(t, ts.Engine, "busy", 2, 0, 1)
	again := ts.createRule(t, `{"name":"again","kind":"flow","resource":"again","threshold":10}`)
	traffic(t, ts.Engine, "again", 1, 0, 1)
	resp, body = ts.call(t, http.MethodDelete, ruleURL(again.ID), nil, nil)
	mustStatus(t, resp, body, http.StatusNoContent)
	for _, tc := range []struct {
		resource string
		known    bool
	}{
		{"gone", false},
		{"never", false},
		{"idle", true},
		{"busy", true},
		{"again", true},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			resp, body := ts.call(t, http.MethodGet, "/api/v1/resources?q="+tc.resource, nil, nil)
			mustStatus(t, resp, body, http.StatusOK)
			listed := false
			for _, r := range decodeStrict[ResourceList](t, body).Items {
				listed = listed || r.Name == tc.resource
			}
			if listed != tc.known {
				t.Errorf("listed = %t, want %t", listed, tc.known)
			}
			resp, body = ts.call(t, http.MethodGet, "/api/v1/resources/"+tc.resource+"/metrics", nil, nil)
			if !tc.known {
				wantError(t, resp, body, http.StatusNotFound, "not_found")
				return
			}
			mustStatus(t, resp, body, http.StatusOK)
		})
	}
}
