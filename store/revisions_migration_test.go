package store

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	_ "github.com/mattn/go-sqlite3"
	"github.com/pressly/goose/v3"

	"github.com/sluicehq/sluice/migrations"
)

// TestRevisionFormatMigration builds a database at version 4 with revisions
// as the API showed the rule, opens it, and finds them in the rule
// domain's format 1; down again gives the old content back.
func TestRevisionFormatMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(t.Context(), 4); err != nil {
		t.Fatal(err)
	}
	old := map[int64]string{
		1: `{"id":7,"name":"orders-qps","kind":"flow","resource":"GET:/api/orders","enabled":true,"mode":"enforce","description":"cap","threshold":100,"statIntervalMs":1000,"metric":"qps","controlBehavior":"throttling","maxQueueingTimeMs":500,"tokenCalculateStrategy":"direct","relationStrategy":"current","version":1,"createdAt":"2026-03-01T12:00:00Z","updatedAt":"2026-03-01T12:00:00Z"}`,
		2: `{"id":7,"name":"pay-errors","kind":"circuitBreaker","resource":"pay","enabled":false,"mode":"shadow","description":"","threshold":0.5,"statIntervalMs":1000,"strategy":"errorRatio","retryTimeoutMs":5000,"minRequestAmount":5,"probeNum":1,"version":2,"createdAt":"2026-03-01T12:00:00Z","updatedAt":"2026-03-01T12:05:00.5Z"}`,
	}
	for version, content := range old {
		if _, err := db.ExecContext(t.Context(), `INSERT INTO rule_revisions (rule_id, version, action, content, actor, reason, created_at)
			VALUES (7, ?, 'update', ?, 'ci', '', '2026-03-01 12:00:00')`, version, content); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := provider.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{
		1: `{"format":1,"id":7,"name":"orders-qps","kind":"flow","resource":"GET:/api/orders","enabled":true,"mode":"enforce","description":"cap","spec":{"threshold":100,"statIntervalMs":1000,"metric":"qps","controlBehavior":"throttling","maxQueueingTimeMs":500,"tokenCalculateStrategy":"direct","relationStrategy":"current"},"version":1,"createdAt":"2026-03-01T12:00:00Z","updatedAt":"2026-03-01T12:00:00Z"}`,
		2: `{"format":1,"id":7,"name":"pay-errors","kind":"circuitBreaker","resource":"pay","enabled":false,"mode":"shadow","description":"","spec":{"threshold":0.5,"statIntervalMs":1000,"strategy":"errorRatio","retryTimeoutMs":5000,"minRequestAmount":5,"probeNum":1},"version":2,"createdAt":"2026-03-01T12:00:00Z","updatedAt":"2026-03-01T12:05:00.5Z"}`,
	}
	assertContents(t, db, want)

	if _, err := provider.DownTo(t.Context(), 4); err != nil {
		t.Fatal(err)
	}
	assertContents(t, db, old)
}

// assertContents compares each revision's content, as JSON, with want's.
func assertContents(t *testing.T, db *sql.DB, want map[int64]string) {
	t.Helper()
	for version, content := range want {
		var got string
		if err := db.QueryRowContext(t.Context(), `SELECT content FROM rule_revisions WHERE rule_id = 7 AND version = ?`, version).Scan(&got); err != nil {
			t.Fatal(err)
		}
		var gotValue, wantValue any
		if err := json.Unmarshal([]byte(got), &gotValue); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(content), &wantValue); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotValue, wantValue) {
			t.Errorf("version %d: content\n%s\nwant\n%s", version, got, content)
		}
	}
}
