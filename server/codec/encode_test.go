package codec_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/codec"
)

// encodingJSON is v as the server's marshalJSON writes it: encoding/json,
// with <, > and & left as they are.
func encodingJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestAppendStringIsEncodingJSONs(t *testing.T) {
	var controls strings.Builder
	for c := range rune(0x20) {
		controls.WriteRune(c)
	}
	strs := []string{
		"", "orders", "GET:/api/orders", `quote " back \ slash`, "<b>&amp;</b>",
		controls.String(), "\x7f del", "café ☕ 日本", "line\u2028para\u2029end",
		"\xff", "a\xc3", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 past U+10FFFF",
		"\uFFFD written", "mix <é> \"\x01\" \u2028 \xfe",
	}
	for _, s := range strs {
		if got, want := string(codec.AppendString([]byte("x"), s)), "x"+encodingJSON(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestAppendFloatIsEncodingJSONs(t *testing.T) {
	floats := []float64{0, math.Copysign(0, -1), 1, -4, 12.5, 1.0 / 3, 2.0 / 3 * 1e6, 1e-6, 9.99e-7, 1e-7, 2.5e-9,
		1e-300, 5e-324, 1e20, 1e21, -1e21, 123456789e30, 1.5e300, math.MaxFloat64, 123456789.125}
	for _, f := range floats {
		if got, want := string(codec.AppendFloat(nil, f)), encodingJSON(t, f); got != want {
			t.Errorf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestAppendTimeIsEncodingJSONs(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 2, 10, 0, 1, 250_000_000, time.UTC),
		time.Date(2026, 3, 2, 10, 0, 1, 1, time.UTC),
		time.Date(2026, 3, 2, 10, 0, 0, 0, time.FixedZone("CET", 3600)),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		{},
	}
	for _, tm := range times {
		if got, want := string(codec.AppendTime(nil, tm)), encodingJSON(t, tm); got != want {
			t.Errorf("AppendTime(%v) = %s, want %s", tm, got, want)
		}
	}
}

func TestAppendStringAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 128)
	if allocs := testing.AllocsPerRun(100, func() { codec.AppendString(buf, "café \"☕\"\n") }); allocs != 0 {
		t.Errorf("AppendString allocates %v times", allocs)
	}
}
