package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"
)

func TestProcCPU(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Skip("no /proc:", err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := procCPU(os.Getpid())
	if err != nil || after < before {
		t.Fatalf("CPU went from %v to %v (%v)", before, after, err)
	}
}

func TestGoals(t *testing.T) {
	rows := []benchRow{
		{Target: bareTarget, Concurrency: 1, AddedP50us: 100},
		{Target: serveTarget, Concurrency: 1, AddedP50us: 105},
		{Target: bareTarget, Concurrency: 64, loadResult: loadResult{RPS: 1000, CPUus: 100}},
		{Target: serveTarget, Concurrency: 64, loadResult: loadResult{RPS: 940, CPUus: 111}},
	}
	gs := goals(rows)
	if len(gs) != 3 {
		t.Fatalf("goals %+v", gs)
	}
	want := []struct {
		figure float64
		met    bool
	}{{1.05, true}, {1.11, false}, {0.94, false}}
	for i, w := range want {
		if gs[i].Figure != w.figure || gs[i].Met != w.met {
			t.Errorf("%s: %v %v, want %v %v", gs[i].Goal, gs[i].Figure, gs[i].Met, w.figure, w.met)
		}
	}
}

// TestUpstreamTLS serves the benchmark's upstream over TLS under a fresh
// CA and checks that a client trusting the CA speaks HTTP/2 to it.
func TestUpstreamTLS(t *testing.T) {
	ca, err := makeCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.client()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		done <- runUpstream(ctx, []string{"--listen", addr, "--cert", ca.certFile, "--key", ca.keyFile}, nil, os.Stderr)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if err := waitUp(ctx, client, "https://"+addr+"/readyz", false); err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get("https://" + addr + protocolsPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Proto != "HTTP/2.0" || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s", resp.Proto, resp.Status)
	}
}

// TestVariantBin: a -variant's first word bin=PATH names the binary it
// runs; its other words, or all of them without it, are its flags.
func TestVariantBin(t *testing.T) {
	for _, c := range []struct {
		v, bin string
		flags  []string
	}{
		{"--access-log=false", "llmfleet", []string{"--access-log=false"}},
		{"bin=/tmp/old/llmfleet", "/tmp/old/llmfleet", []string{}},
		{"bin=/tmp/old/llmfleet --gc-percent=100 -v", "/tmp/old/llmfleet", []string{"--gc-percent=100", "-v"}},
		{"--x bin=/y", "llmfleet", []string{"--x", "bin=/y"}},
	} {
		bin, flags := variantBin(c.v, "llmfleet")
		if bin != c.bin || !slices.Equal(flags, c.flags) {
			t.Errorf("variantBin(%q) = %q %q, want %q %q", c.v, bin, flags, c.bin, c.flags)
		}
	}
}
