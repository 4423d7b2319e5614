package postgres_test

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

// cutProxy forwards connections to a PostgreSQL server. Armed, it watches
// the connection that sends an insert of requests: the server's answer to
// the insert (its "INSERT 0 n" command tag) and everything after it are
// not passed on, and the connection is cut once the server has had time
// to commit, so that the client never gets the answer.
type cutProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	cuts   atomic.Int32
	wg     sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	var once sync.Once
	cut := func() { once.Do(func() { client.Close(); server.Close() }) }
	defer cut()
	var watched atomic.Bool // this connection sent the armed insert
	go func() {
		defer cut()
		buf := make([]byte, 64<<10)
		muted := false
		for {
			n, err := server.Read(buf)
			if n > 0 && !muted && watched.Load() && bytes.Contains(buf[:n], []byte("INSERT 0 ")) {
				// The insert ran: its answer is never passed on, and
				// the connection is cut once it has had time to commit.
				muted = true
				time.AfterFunc(300*time.Millisecond, func() { p.cuts.Add(1); cut() })
			}
			if n > 0 && !muted {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if bytes.Contains(buf[:n], []byte("INSERT INTO requests")) && p.armed.CompareAndSwap(true, false) {
				watched.Store(true)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// An acceptance whose insert committed but whose answer was lost (the
// connection cut) is reported accepted, not failed: a caller told it
// failed would send it again while the stored one is batched and paid.
// Its id is then taken; the next acceptance goes on as usual.
func TestAddRequestAnswerLost(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := newCutProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	d := open(t, u.String())
	ctx := t.Context()
	now := time.Now()
	req := func(id string) *llmfleet.StoredRequest {
		return &llmfleet.StoredRequest{ID: id, Provider: "anthropic", CredentialID: "cred_x", Body: []byte(`{"n":1}`),
			Model: "m", AcceptedAt: now}
	}
	p.armed.Store(true)
	if err := d.AddRequest(ctx, req("lfr_cut")); err != nil {
		got, gerr := d.GetRequest(ctx, "lfr_cut")
		t.Fatalf("AddRequest whose answer was lost: %v (stored: %+v, %v)", err, got, gerr)
	}
	if p.cuts.Load() != 1 {
		t.Fatalf("%d connections cut, want 1", p.cuts.Load())
	}
	got, err := d.GetRequest(ctx, "lfr_cut")
	if err != nil || got.State != llmfleet.RequestQueued {
		t.Fatalf("the request after the cut: %+v, %v", got, err)
	}
	if err := d.AddRequest(ctx, req("lfr_cut")); !errors.Is(err, llmfleet.ErrExists) {
		t.Fatalf("its id again: %v, want ErrExists", err)
	}
	if err := d.AddRequest(ctx, req("lfr_next")); err != nil {
		t.Fatalf("the next request: %v", err)
	}
}
