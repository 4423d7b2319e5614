package proxy_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// keyed is a keyed fingerprint, as the vault's is in serve.
func keyed(c llmfleet.Credential) string { return c.Fingerprint([]byte("instance secret")) }

// The sync route's ledger entries and the batched Requests name their
// client by its keyed key label; never by the key.
func TestClientAttributionByKeyLabel(t *testing.T) {
	emu := httptest.NewServer(&emulator.Server{})
	defer emu.Close()
	u, _ := url.Parse(emu.URL)
	o := &observed{added: make(chan struct{}, 1)}
	sub := &fakeSubmitter{}
	srv := &proxy.Server{Upstream: u, Observe: o.observe, Submitter: sub, Fingerprint: keyed}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	client := newClient(ts.URL, optAPIKey("sk-alice"))
	ctx := context.Background()

	if _, err := client.Messages.New(ctx, userParams("sync")); err != nil {
		t.Fatal(err)
	}
	want := keyed(llmfleet.Credential{APIKey: "sk-alice"})
	if e := one(t, o, "ok"); e.Client != want || strings.Contains(e.Client, "sk-alice") {
		t.Fatalf("sync entry client %q, want %q", e.Client, want)
	}
	if _, err := client.Messages.New(ctx, userParams("batched"), optHeader("llmfleet-route", "batch")); err != nil {
		t.Fatal(err)
	}
	reqs := sub.requests()
	if len(reqs) != 1 || reqs[0].Client != want {
		t.Fatalf("batched request client %q, want %q", reqs[0].Client, want)
	}
}

// In proxy-held-key mode the client is named as the configuration names
// it, whichever header carries its key.
func TestClientAttributionByName(t *testing.T) {
	emu := httptest.NewServer(&emulator.Server{})
	defer emu.Close()
	u, _ := url.Parse(emu.URL)
	keys := &proxy.ClientKeys{
		Upstream: llmfleet.Credential{APIKey: "sk-upstream"},
		Hashes:   map[string]string{proxy.HashKey("proxy-key-alice"): "alice", proxy.HashKey("proxy-key-bob"): "bob"},
	}
	o := &observed{added: make(chan struct{}, 1)}
	sub := &fakeSubmitter{}
	srv := &proxy.Server{Upstream: u, Observe: o.observe, Submitter: sub, Fingerprint: keyed,
		Credentials: keys.Map, ClientName: keys.Name}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	ctx := context.Background()

	alice := newClient(ts.URL, optAPIKey("proxy-key-alice"))
	if _, err := alice.Messages.New(ctx, userParams("sync")); err != nil {
		t.Fatal(err)
	}
	if e := one(t, o, "ok"); e.Client != "alice" {
		t.Fatalf("sync entry client %q, want alice", e.Client)
	}
	bob := newClient(ts.URL, optAPIKey(""), optHeader("Authorization", "Bearer proxy-key-bob"))
	if _, err := bob.Messages.New(ctx, userParams("batched"), optHeader("llmfleet-route", "batch")); err != nil {
		t.Fatal(err)
	}
	if reqs := sub.requests(); len(reqs) != 1 || reqs[0].Client != "bob" {
		t.Fatalf("batched requests %+v, want one of bob", reqs)
	}
	if got := keys.Name(llmfleet.Credential{APIKey: "unknown"}); got != "" {
		t.Fatalf("Name of an unknown key: %q", got)
	}
}
