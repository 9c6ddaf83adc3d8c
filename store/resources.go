package store

import (
	"gorm.io/gorm"

	"context"
	"database/sql"
	"errors"
	"slices"
)

// CatalogueEntry is a resource of the catalogue: one that had traffic
// within retention, or that rules name.
type CatalogueEntry struct {
	Name string
	// FirstSeenMs and LastSeenMs bound its traffic (Unix milliseconds);
	// nil when it had none, as a resource named by a rule may.
	FirstSeenMs *int64
	LastSeenMs  *int64
	// RuleCount counts the rules, disabled ones too, that name it.
	RuleCount int
}

// nameFilter is the WHERE clause that keeps the names containing q, and
// its arguments; none when q is "". SQLite's LIKE ignores the case of ASCII
// letters only; PostgreSQL's LIKE minds case, so it compares the names
// with their ASCII letters lowered (lower would follow the database's
// locale, and fold more).
func nameFilter(db *gorm.DB, q string) (string, []any) {
	if q == "" {
		return "", nil
	}
	pattern := "%" + escapeLike(q) + "%"
	if onPostgres(db) {
		const fold = "'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'"
		return ` WHERE translate(name, ` + fold + `) LIKE translate(?, ` + fold + `) ESCAPE '\'`, []any{pattern}
	}
	return ` WHERE name LIKE ? ESCAPE '\'`, []any{pattern}
}

// NameContains reports whether name contains q as the catalogue's filter
// matches it (SQLite's LIKE): ASCII letters in either case, every other
// character as it is.
func NameContains(name, q string) bool {
	for i := 0; i+len(q) <= len(name); i++ {
		if equalFoldASCII(name[i:i+len(q)], q) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a, b string) bool {
	for i := range len(a) {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// CountCatalogue counts the resources of the catalogue whose name contains
// q (NameContains); all of them if q is "". Without q it reads the name
// index's pages; with q it scans the names.
func (s *Store) CountCatalogue(ctx context.Context, q string) (int64, error) {
	db := s.read.WithContext(ctx)
	where, args := nameFilter(db, q)
	var n int64
	err := db.Raw(`SELECT count(*) FROM resources`+where, args...).Scan(&n).Error
	return n, err
}

// CatalogueNames returns, in name order (byte-wise), the names of the
// catalogue that contain q (NameContains), skipping the first offset and
// at most limit. It walks the name index, never the table.
func (s *Store) CatalogueNames(ctx context.Context, q string, offset, limit int) ([]string, error) {
	db := s.read.WithContext(ctx)
	where, args := nameFilter(db, q)
	names := []string{}
	err := db.Raw(`SELECT name FROM resources`+where+` ORDER BY name LIMIT ? OFFSET ?`,
		append(args, limit, offset)...).Scan(&names).Error
	return names, err
}

// CatalogueEntries returns the catalogue's entries of names, by name;
// names it does not hold are absent.
func (s *Store) CatalogueEntries(ctx context.Context, names []string) (map[string]CatalogueEntry, error) {
	out := make(map[string]CatalogueEntry, len(names))
	for batch := range slices.Chunk(names, namesPerQuery) {
		rows, err := s.read.WithContext(ctx).Raw(`SELECT name, first_seen_ms, last_seen_ms, rule_count
			FROM resources WHERE name IN ?`, batch).Rows()
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var e CatalogueEntry
			var first, last sql.NullInt64
			if err := rows.Scan(&e.Name, &first, &last, &e.RuleCount); err != nil {
				return nil, errors.Join(err, rows.Close())
			}
			if first.Valid && last.Valid {
				e.FirstSeenMs, e.LastSeenMs = &first.Int64, &last.Int64
			}
			out[e.Name] = e
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}
