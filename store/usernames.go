package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// Migrations that the usernames' check goes by.
const (
	// usersVersion created the users table (00003_create_auth.sql).
	usersVersion = 3
	// usernamesFoldVersion made usernames unique whatever their case
	// (00010_usernames_case_insensitive.sql).
	usernamesFoldVersion = 10
)

// checkUsernameClashes fails, naming them, when some usernames of db
// differ only in case: the unique index of usernamesFoldVersion would
// refuse them with a bare constraint error, and which of them to keep is
// the operator's choice. lower() is the index's own, so the check agrees
// with it on either database.
func checkUsernameClashes(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT lower(username), username FROM users WHERE lower(username) IN
		(SELECT lower(username) FROM users GROUP BY lower(username) HAVING COUNT(*) > 1)`)
	if err != nil {
		return fmt.Errorf("look for usernames that differ only in case: %w", err)
	}
	defer rows.Close()
	clashes := map[string][]string{}
	for rows.Next() {
		var folded, username string
		if err := rows.Scan(&folded, &username); err != nil {
			return err
		}
		clashes[folded] = append(clashes[folded], fmt.Sprintf("%q", username))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(clashes) == 0 {
		return nil
	}
	groups := make([]string, 0, len(clashes))
	for _, names := range clashes {
		slices.Sort(names)
		groups = append(groups, strings.Join(names, ", "))
	}
	slices.Sort(groups)
	return fmt.Errorf("from this version on, usernames that differ only in case name one user, and these clash: %s; "+
		"delete all but one of each (with the sluice version that made them: DELETE /api/v1/users/{id}), then start this one again",
		strings.Join(groups, "; "))
}
