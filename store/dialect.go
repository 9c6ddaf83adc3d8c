package store

import (
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// The little SQL that differs between SQLite and PostgreSQL, for the
// statements the store writes itself.

// onPostgres reports whether tx runs on PostgreSQL.
func onPostgres(tx *gorm.DB) bool { return tx.Dialector.Name() == "postgres" }

// least is the dialect's scalar function of the least of its arguments:
// SQLite's min is NULL if any argument is, PostgreSQL's LEAST ignores
// NULLs; the statements wrap it in coalesce, which makes them agree.
func least(tx *gorm.DB) string {
	if onPostgres(tx) {
		return "LEAST"
	}
	return "min"
}

// greatest is least's counterpart for the greatest argument.
func greatest(tx *gorm.DB) string {
	if onPostgres(tx) {
		return "GREATEST"
	}
	return "max"
}

// bind numbers the ? placeholders of query ($1, $2, …) for PostgreSQL,
// for statements sent to the connection pool directly rather than through
// GORM, which does it itself. The store's statements have no ? in a
// string or an identifier.
func bind(tx *gorm.DB, query string) string {
	if !onPostgres(tx) {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}
