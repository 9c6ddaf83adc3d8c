package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// sendBody writes a request of method and path with headers and a body of
// size bytes (a JSON rule file padded with spaces, so that a route that
// reads it whole finds it valid) on a connection of its own, and returns
// the answer's status and the bytes the whole process allocated meanwhile.
func sendBody(t *testing.T, addr, method, path string, header http.Header, size int) (int, uint64) {
	t.Helper()
	const file = `{"rules":[]}`
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: sluice.test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, path, size)
	for k, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	head.WriteString("\r\n")

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sent := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(conn, 64<<10)
		_, err := io.WriteString(w, head.String()+file)
		if err == nil {
			_, err = io.CopyN(w, spaces{}, int64(size-len(file)))
		}
		if err == nil {
			err = w.Flush()
		}
		sent <- err
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if err := <-sent; err != nil {
		t.Fatalf("%s %s: sending the body: %v", method, path, err)
	}
	return resp.StatusCode, after.TotalAlloc - before.TotalAlloc
}

// spaces reads as an endless run of spaces.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestBodiesAreBounded: a rule file of several MiB applies for a caller
// the route allows, and is never held in memory for anyone else, nor on
// any other route; compressed bodies are refused. Not parallel: it
// measures what the whole process allocates.
func TestBodiesAreBounded(t *testing.T) {
	n := startAuthNode(t)
	viewer, _ := n.newToken(t, "viewer", roleViewer, "")
	editor, _ := n.newToken(t, "editor", roleEditor, "")
	const size = 6 << 20
	// What a request may allocate in all, the answer and the server's own
	// background work included, when it must not hold its body.
	const bound = 2 << 20

	tests := []struct {
		name, method, path string
		header             http.Header
		wantStatus         int
		held               bool
	}{
		{"apply without credentials", "POST", "/api/v1/rules/apply", nil, http.StatusUnauthorized, false},
		{"apply with a bad token", "POST", "/api/v1/rules/apply", bearer("nope"), http.StatusUnauthorized, false},
		{"apply by a viewer", "POST", "/api/v1/rules/apply", bearer(viewer), http.StatusForbidden, false},
		{"import by a viewer", "POST", "/api/v1/rules/import?format=sentinel", bearer(viewer), http.StatusForbidden, false},
		{"apply spelled otherwise", "POST", "/api/v1/rules/apply/", bearer(editor), http.StatusRequestEntityTooLarge, false},
		{"apply with the wrong method", "PUT", "/api/v1/rules/apply", bearer(editor), http.StatusRequestEntityTooLarge, false},
		{"a rule", "POST", "/api/v1/rules", bearer(editor), http.StatusRequestEntityTooLarge, false},
		{"login", "POST", "/api/v1/auth/login", nil, http.StatusRequestEntityTooLarge, false},
		{"the console", "POST", "/", nil, http.StatusRequestEntityTooLarge, false},
		{"apply by an editor", "POST", "/api/v1/rules/apply", bearer(editor), http.StatusOK, true},
		{"a plan by a viewer", "POST", "/api/v1/rules/apply?dryRun=true", bearer(viewer), http.StatusOK, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, allocated := sendBody(t, n.Addr, tt.method, tt.path, tt.header, size)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d", status, tt.wantStatus)
			}
			if !tt.held && allocated > bound {
				t.Errorf("the server allocated %d bytes for a %d-byte body it must not hold (bound %d)", allocated, size, bound)
			}
		})
	}

	t.Run("over 64 MiB", func(t *testing.T) {
		resp, body := n.DoRaw(t, fmt.Sprintf("POST /api/v1/rules/apply HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", editor, maxRuleFileBytes+1, strings.Repeat(" ", 16<<10)))
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d, want 413 (%s)", resp.StatusCode, body)
		}
	})
	t.Run("compressed", func(t *testing.T) {
		resp, body := n.DoWith(t, http.MethodPost, "/api/v1/check", strings.NewReader(`{"resource":"x"}`),
			http.Header{"Authorization": {"Bearer " + editor}, "Content-Encoding": {"gzip"}})
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("status = %d, want 415 (%s)", resp.StatusCode, body)
		}
		decodeEnvelope(t, resp, body)
	})
}
