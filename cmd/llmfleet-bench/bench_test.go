package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestBenchSmoke runs the latency part of llmfleet-bench briefly and
// checks its JSON line; it asserts nothing about the figures.
func TestBenchSmoke(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runBench(t.Context(), []string{"-duration", "20ms", "-rounds", "1", "-concurrency", "1,2", "-park", "0"}, &out, &errOut)
	if err != nil {
		t.Fatal(err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var rep benchReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("last line is not the JSON report: %v\n%s", err, out.String())
	}
	if len(rep.Sync) != 8 || len(rep.Stream) != 4 || len(rep.Ratio) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range append(rep.Sync, rep.Stream...) {
		if r.Errors != 0 || r.Requests == 0 {
			t.Fatalf("%s at %d callers: %d requests, %d errors", r.Target, r.Concurrency, r.Requests, r.Errors)
		}
	}
}

// TestParkClient checks that the memory benchmark's client process parks
// n distinct requests, each on its own connection, and lets them go when
// it is interrupted.
func TestParkClient(t *testing.T) {
	const n = 40
	arrived := make(chan string, n)
	var left sync.WaitGroup
	left.Add(n)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer left.Done()
		b, _ := io.ReadAll(r.Body)
		arrived <- r.Header.Get("Llmfleet-Latency-Budget-Ms") + " " + string(b)
		<-r.Context().Done()
	})
	base, stop, err := serveLoopback(h)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- runParkClient(ctx, []string{"-url", base, "-n", "40", "-hold-stdin=false",
			"-header", "Llmfleet-Latency-Budget-Ms: 3600000"}, &out, io.Discard)
	}()
	seen := map[string]bool{}
	for range n {
		got := <-arrived
		if !strings.HasPrefix(got, "3600000 ") || seen[got] {
			t.Fatalf("request %q (duplicate: %v)", got, seen[got])
		}
		seen[got] = true
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	left.Wait() // every handler saw its caller leave
	if out.String() != "parked 40\n" {
		t.Fatalf("stdout %q", out.String())
	}
}

// TestRun checks the command's exit codes and that it refuses stray
// arguments.
func TestRun(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"-h"}, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "usage: llmfleet-bench") {
		t.Fatalf("-h: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run(t.Context(), []string{"extra"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "unexpected arguments") {
		t.Fatalf("a stray argument: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run(t.Context(), []string{parkClientCommand, "-url", "nowhere"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "is not a base URL") {
		t.Fatalf("the park client with a bad URL: exit %d, %q", code, errOut.String())
	}
}
