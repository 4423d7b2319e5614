package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestProbe: 200 is healthy; a 503 (serve starting or shutting down) and
// a closed port are not.
func TestProbe(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"status":"ready"}`))
	}))
	url := srv.URL + "/readyz"
	ctx := context.Background()
	if err := probe(ctx, srv.Client(), url); err == nil {
		t.Fatal("503: no error")
	}
	ready.Store(true)
	if err := probe(ctx, srv.Client(), url); err != nil {
		t.Fatalf("200: %v", err)
	}
	srv.Close()
	if err := probe(ctx, srv.Client(), url); err == nil {
		t.Fatal("closed port: no error")
	}
}
