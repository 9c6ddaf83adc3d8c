package check

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// checkBodies are bodies for both decoders: the usual shapes, and shapes the
// scanner must leave to the full decoder.
var checkBodies = []string{
	`{"resource": "orders"}`,
	`{"resource":"orders","count":3}`,
	` { "count" : 7 , "resource" : "GET /api/orders/:id" } `,
	"{\n\t\"resource\": \"orders\"\r\n}",
	`{"resource": "orders", "count": 0}`,
	`{"resource": "orders", "count": -5}`,
	`{"resource": "orders", "count": -0}`,
	`{"resource": "orders", "count": 1000001}`,
	`{"resource": "orders", "count": 999999999999999}`,
	`{"resource": "orders", "count": 9999999999999999}`,
	`{"resource": "orders", "count": 1e3}`,
	`{"resource": "orders", "count": 2.0}`,
	`{"resource": "orders", "count": 2.5}`,
	`{"resource": "orders", "count": 007}`,
	`{"resource": "orders", "count": "2"}`,
	`{"resource": "orders", "count": null}`,
	`{"resource": "orders", "count": true}`,
	`{"resource": "orders", "resource": "other"}`,
	`{"resource": "orders", "Resource": "other"}`,
	`{"resource": "ord\"ers"}`,
	`{"resource": "ord\u0065rs"}`,
	`{"resource": "ord\u0000ers"}`,
	"{\"resource\": \"ord\x01ers\"}",
	"{\"resource\": \"ord\x7fers\"}",
	"{\"resource\": \"caf\xc3\xa9\"}",
	"{\"resource\": \"caf\xc3\"}",
	`{"resource": "` + strings.Repeat("é", 256) + `"}`,
	`{"resource": "` + strings.Repeat("é", 257) + `"}`,
	`{"resource": "` + strings.Repeat("a", 256) + `"}`,
	`{"resource": "` + strings.Repeat("a", 257) + `"}`,
	`{"resource": ""}`,
	`{"resource": null}`,
	`{"resource": 5}`,
	`{"resource": ["a"]}`,
	`{}`,
	`{"count": 1}`,
	`{"resource": "a",}`,
	`{"resource": "a"}}`,
	`{"resource": "a"} x`,
	`{"resource": "a"`,
	`{"resource" "a"}`,
	`[]`,
	`null`,
	``,
	`"orders"`,
	`{"resource": "orders", "origin": "app-a"}`,
	`{"origin": "app-a", "resource": "orders", "count": 2, "prioritized": true}`,
	`{"resource": "orders", "prioritized": false}`,
	`{"resource": "orders", "prioritized": null}`,
	`{"resource": "orders", "prioritized": tru}`,
	`{"resource": "orders", "prioritized": "true"}`,
	`{"resource": "orders", "origin": ""}`,
	`{"resource": "orders", "origin": null}`,
	`{"resource": "orders", "origin": "` + strings.Repeat("é", 256) + `"}`,
	`{"resource": "orders", "origin": "` + strings.Repeat("é", 257) + `"}`,
	`{"resource": "orders", "origin": "a", "origin": "b"}`,
	`{"resource": "orders", "params": {}}`,
	`{"resource": "orders", "params": null}`,
	`{"resource": "orders", "params": {"user": "42", "ip": "10.0.0.1"}}`,
	`{"params": {"b": "2", "a": "1", "c": ""}, "resource": "orders"}`,
	`{"resource": "orders", "params": {"user": "42", "user": "43"}}`,
	`{"resource": "orders", "params": {"user": 42}}`,
	`{"resource": "orders", "params": {"user": null}}`,
	`{"resource": "orders", "params": {"us\u0065r": "42"}}`,
	`{"resource": "orders", "params": {"user": "` + strings.Repeat("é", 256) + `"}}`,
	`{"resource": "orders", "params": {"user": "` + strings.Repeat("é", 257) + `"}}`,
	`{"resource": "orders", "params": {"user": "42",}}`,
	`{"resource": "orders", "params": ["user"]}`,
	`{"resource": "orders", "params": {"a": "1"}, "params": {"b": "2"}}`,
	manyParams(32),
	manyParams(33),
}

// manyParams is a check body with n params.
func manyParams(n int) string {
	pairs := make([]string, n)
	for i := range pairs {
		pairs[i] = fmt.Sprintf(`"k%02d": "v"`, i)
	}
	return `{"resource": "orders", "params": {` + strings.Join(pairs, ", ") + `}}`
}

// TestCheckDecodersAgree proves that the scanner only takes bodies the full
// decoder reads the same way: decodeCheck and decodeCheckFields answer alike
// for every body. FuzzCheckDecoders searches further.
func TestCheckDecodersAgree(t *testing.T) {
	for _, body := range checkBodies {
		checkDecodersAgree(t, []byte(body))
		checkBatchDecodersAgree(t, []byte(`{"checks": [`+body+`]}`))
		checkBatchDecodersAgree(t, []byte(`{"checks": [{"resource": "a"}, `+body+`, {"resource": "b", "count": 2}]}`))
	}
}

func FuzzCheckDecoders(f *testing.F) {
	for _, body := range checkBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecodersAgree(t, body)
		checkBatchDecodersAgree(t, body)
	})
}

func checkDecodersAgree(t *testing.T, body []byte) {
	t.Helper()
	q, err := decodeCheck(body, &nameCache{})
	wantQ, wantErr := decodeCheckFields(body)
	if !reflect.DeepEqual(q, wantQ) || !reflect.DeepEqual(err, wantErr) {
		t.Errorf("%q: decodeCheck = %+v, %v; the full decoder: %+v, %v", body, q, err, wantQ, wantErr)
	}
}

func checkBatchDecodersAgree(t *testing.T, body []byte) {
	t.Helper()
	queries, err := decodeBatch(body, nil, nil)
	wantQueries, wantErr := decodeBatchFields(body)
	if err == nil && wantErr == nil && !reflect.DeepEqual(queries, wantQueries) || !reflect.DeepEqual(err, wantErr) {
		t.Errorf("%q: decodeBatch = %+v, %v; the full decoder: %+v, %v", body, queries, err, wantQueries, wantErr)
	}
}

// TestCheckProblemsOfAGoodCheckAllocateNothing: judging a valid scanned
// check, with or without an origin, allocates nothing (an absent origin
// once cost a formatted message per check of a batch).
func TestCheckProblemsOfAGoodCheckAllocateNothing(t *testing.T) {
	for _, q := range []checkQuery{
		{resource: "orders", count: 1},
		{resource: "orders", count: 2, origin: "shop", params: []checkParam{{"user", "42"}}},
	} {
		if errs := checkProblems(q, "checks.0."); errs != nil {
			t.Fatalf("checkProblems(%+v) = %v, want none", q, errs)
		}
		if allocs := testing.AllocsPerRun(100, func() { checkProblems(q, "checks.0.") }); allocs != 0 {
			t.Errorf("checkProblems(%+v) allocates %v times", q, allocs)
		}
	}
}
