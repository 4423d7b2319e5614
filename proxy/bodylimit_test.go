package proxy_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/proxy"
)

const partialBody = `{"model":"claude-test","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`

// sendPartial opens a raw connection to the proxy at base and sends a POST
// to path declaring length bytes of body, of which it sends only part.
func sendPartial(t *testing.T, base, path string, length int, part string) net.Conn {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: "+u.Host+"\r\nX-Api-Key: sk-test-a\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(length)+"\r\n\r\n"+part)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// readAnswer reads the proxy's answer on conn and its error type.
func readAnswer(t *testing.T, conn net.Conn, closed bool) (*http.Response, string) {
	t.Helper()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var env struct {
		Error struct{ Type string } `json:"error"`
	}
	json.Unmarshal(b, &env)
	// The connection is closed after the answer.
	if !closed {
		return resp, env.Error.Type
	}
	if _, err := br.ReadByte(); closed && !errors.Is(err, io.EOF) {
		t.Errorf("connection left open after %d: %v", resp.StatusCode, err)
	}
	return resp, env.Error.Type
}

// TestBodyReadTimeout: a body that stops coming is answered 408
// timeout_error once the body read timeout has passed on the routed
// route (read whole).
func TestBodyReadTimeout(t *testing.T) {
	u := newUpstream(t)
	ts := newProxy(t, &proxy.Server{BodyReadTimeout: 50 * time.Millisecond}, u)
	for _, path := range []string{"/budget/60000/v1/messages", "//budget/60000/v1/messages"} {
		conn := sendPartial(t, ts.URL, path, 500, partialBody[:9])
		resp, typ := readAnswer(t, conn, true)
		if resp.StatusCode != http.StatusRequestTimeout || typ != "timeout_error" {
			t.Errorf("%s: %d %q", path, resp.StatusCode, typ)
		}
	}
	// A body sent in time is served, and a long answer is not cut by it.
	resp := post(t, ts.URL+"/budget/60000/v1/messages", partialBody)
	if resp.StatusCode != 200 {
		t.Fatalf("whole body: %d", resp.StatusCode)
	}
}

// TestBodyBytesInFlight: bodies held unfinished count against the budget;
// one that would go over is refused 529 overloaded_error, and the bytes
// are given back once the body is read.
func TestBodyBytesInFlight(t *testing.T) {
	u := newUpstream(t)
	srv := &proxy.Server{BodyReadTimeout: -1, MaxBodyBytesInFlight: 1000}
	ts := newProxy(t, srv, u)
	padded := partialBody[:len(partialBody)-1] + `,"metadata":{"user_id":"` + string(bytesOf('x', 700)) + `"}}`
	a := sendPartial(t, ts.URL, "/budget/60000/v1/messages", len(padded), padded[:9])
	for srv.BodyBytesInFlight() != int64(len(padded)) {
		time.Sleep(time.Millisecond) // waiting for the proxy to begin reading
	}
	b := sendPartial(t, ts.URL, "/budget/60000/v1/messages", 300, partialBody[:9])
	b.SetReadDeadline(time.Now().Add(time.Second)) // the server may still wait for the rest of the body
	resp, typ := readAnswer(t, b, false)
	if resp.StatusCode != 529 || typ != "overloaded_error" {
		t.Fatalf("over the budget: %d %q", resp.StatusCode, typ)
	}
	// The first body, finished, is served.
	if _, err := io.WriteString(a, padded[9:]); err != nil {
		t.Fatal(err)
	}
	r, err := http.ReadResponse(bufio.NewReader(a), nil)
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("finished body: %v %v", r, err)
	}
	r.Body.Close()
	if n := srv.BodyBytesInFlight(); n != 0 {
		t.Fatalf("%d bytes still counted", n)
	}
}

func bytesOf(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}
