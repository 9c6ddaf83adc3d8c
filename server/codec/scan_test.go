package codec_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/codec"
)

func TestScannerStr(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{`"orders"`, "orders", true},
		{" \t\r\n\"orders\"", "orders", true},
		{`""`, "", true},
		{"\"caf\xc3\xa9 \xe2\x98\x95\"", "café ☕", true},
		{"\"<&>\x7f\"", "<&>\x7f", true},
		{`"a\"b"`, "", false},
		{`"\u0061"`, "", false},
		{"\"a\x01\"", "", false},
		{"\"a\tb\"", "", false},
		{"\"\xff\"", "", false},
		{"\"\xc3\"", "", false},
		{`"unterminated`, "", false},
		{`orders`, "", false},
		{``, "", false},
	}
	for _, tt := range tests {
		s := codec.NewScanner([]byte(tt.in))
		got, ok := s.Str()
		if ok != tt.wantOK || string(got) != tt.want {
			t.Errorf("Str(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
		if ok && !s.End() {
			t.Errorf("Str(%q) left bytes unread", tt.in)
		}
	}
}

func TestScannerInteger(t *testing.T) {
	tests := []struct {
		in     string
		want   int64
		wantOK bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{" 42", 42, true},
		{"-5", -5, true},
		{"999999999999999", 999999999999999, true},
		{"-999999999999999", -999999999999999, true},
		{"1000000000000000", 0, false}, // 16 digits: left to the strict decoder
		{"007", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{"1E3", 0, false},
		{"-", 0, false},
		{"", 0, false},
		{`"1"`, 0, false},
		{"+1", 0, false},
	}
	for _, tt := range tests {
		s := codec.NewScanner([]byte(tt.in))
		got, ok := s.Integer()
		if ok != tt.wantOK || ok && got != tt.want {
			t.Errorf("Integer(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestScannerBoolean(t *testing.T) {
	tests := []struct {
		in           string
		want, wantOK bool
	}{
		{"true", true, true},
		{" false", false, true},
		{"tru", false, false},
		{"null", false, false},
		{`"true"`, false, false},
		{"True", false, false},
	}
	for _, tt := range tests {
		s := codec.NewScanner([]byte(tt.in))
		if got, ok := s.Boolean(); ok != tt.wantOK || got != tt.want {
			t.Errorf("Boolean(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestScannerObject reads a whole object as the check API's decoder does.
func TestScannerObject(t *testing.T) {
	s := codec.NewScanner([]byte(" {\n\"count\" : 3 , \"ok\":true}\r\n"))
	if !s.Byte('{') {
		t.Fatal("no {")
	}
	key, ok := s.Str()
	if !ok || string(key) != "count" || !s.Byte(':') {
		t.Fatalf("key %q, %v", key, ok)
	}
	if n, ok := s.Integer(); !ok || n != 3 || !s.Byte(',') {
		t.Fatalf("count %d, %v", n, ok)
	}
	if key, ok := s.Str(); !ok || string(key) != "ok" || !s.Byte(':') {
		t.Fatalf("key %q, %v", key, ok)
	}
	if b, ok := s.Boolean(); !ok || !b || !s.Byte('}') || !s.End() {
		t.Fatalf("ok %v, %v, or bytes left", b, ok)
	}
	trailing := codec.NewScanner([]byte(strings.Repeat(" ", 3) + "{} x"))
	if !trailing.Byte('{') || !trailing.Byte('}') || trailing.End() {
		t.Error(`"{} x": End, want bytes left`)
	}
}
