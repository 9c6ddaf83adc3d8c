package servertest

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Do sends one request as the bootstrap admin and returns the response
// with its body read.
func (n *Node) Do(t testing.TB, method, path string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	return n.DoWith(t, method, path, body, http.Header{"Authorization": {"Bearer " + AdminToken}})
}

// DoWith sends one request with exactly the headers given (none: no
// credentials) and returns the response with its body read.
func (n *Node) DoWith(t testing.TB, method, path string, body io.Reader, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, n.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := n.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp, got
}

// DoRaw writes head, a request with the first part of its body at most,
// on a new connection and reads the answer. It is for requests an HTTP
// client would not send as they are, or would not stop sending: the server
// refuses an oversized body from its Content-Length and the part of it
// fasthttp reads ahead (8 KiB), then closes the connection, so a client
// still sending the body would see a reset instead of the answer.
func (n *Node) DoRaw(t testing.TB, head string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", n.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n.tls != nil {
		conn = tls.Client(conn, n.tls)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp, body
}
