package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/engine/wire"
	"github.com/sluicehq/sluice/store"
)

// maxScopeApps bounds a scope's apps (docs/api.md, "Per-app scopes").
const maxScopeApps = 64

// apps is the principal's per-app scope: nil when it has none.
func (p *principal) apps() store.Apps {
	if p.token != nil {
		return p.token.Apps
	}
	return p.user.Apps
}

// mayUseApp reports whether the principal's scope lets it at the rules of
// app: any app when it has no scope, else only its apps (a rule without
// app is nobody's in particular, so outside every scope).
func (p *principal) mayUseApp(app string) bool {
	scope := p.apps()
	return len(scope) == 0 || slices.Contains(scope, app)
}

// outOfScope is the 403 of a request about app, at field, from p, whose
// scope does not hold it.
func outOfScope(p *principal, field, app string) *Error {
	msg := fmt.Sprintf("app %q is not one of yours (%s)", app, strings.Join(p.apps(), ", "))
	if app == "" {
		msg = fmt.Sprintf("an app is required: you are held to yours (%s)", strings.Join(p.apps(), ", "))
	}
	return NewError(http.StatusForbidden, msg, FieldError{field, msg})
}

// readApps reads the optional field apps of a user or token request: its
// apps (nil for null: no scope) and whether it was present, adding its
// faults to errs. An empty list is refused rather than read as no scope,
// so that "[]" never grants more than a scope would.
func readApps(o *wire.Object, errs *[]FieldError) (store.Apps, bool) {
	raw, present := o.Value("apps")
	if raw == nil {
		return nil, present
	}
	var apps []string
	if err := json.Unmarshal(raw, &apps); err != nil {
		*errs = append(*errs, FieldError{"apps", "must be an array of app names, or null for no scope"})
		return nil, true
	}
	if len(apps) == 0 || len(apps) > maxScopeApps {
		*errs = append(*errs, FieldError{"apps", fmt.Sprintf("must hold 1 to %d app names (null for no scope)", maxScopeApps)})
		return nil, true
	}
	seen := make(map[string]bool, len(apps))
	for i, app := range apps {
		field := fmt.Sprintf("apps[%d]", i)
		switch {
		case !wire.AppPattern.MatchString(app):
			*errs = append(*errs, FieldError{field, "must match " + wire.AppPattern.String()})
		case seen[app]:
			*errs = append(*errs, FieldError{field, fmt.Sprintf("%q is listed twice", app)})
		}
		seen[app] = true
	}
	return apps, true
}

// checkScopeRole refuses a scope on an admin: an admin can make tokens and
// users of any scope, so one would hold nothing.
func checkScopeRole(role string, apps store.Apps, errs *[]FieldError) {
	if len(apps) > 0 && role == roleAdmin {
		*errs = append(*errs, FieldError{"apps", "an admin cannot be scoped: a scope holds editors, viewers and instance tokens"})
	}
}
