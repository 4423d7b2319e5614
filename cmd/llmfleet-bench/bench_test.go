package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// buildBinaries builds llmfleet and llmfleet-bench into one temporary
// directory and returns the directory.
func buildBinaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the llmfleet binaries")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build llmfleet with")
	}
	dir := t.TempDir()
	if out, err := exec.Command(gobin, "build", "-o", dir+"/", "../llmfleet", ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// TestBenchSmoke runs llmfleet-bench briefly, with its processes
// (the HTTPS upstream, bare proxy, serve, a variant of serve and one of
// the bare proxy, load) started from the built binaries, and checks its
// table and JSON line; it asserts nothing about the figures.
func TestBenchSmoke(t *testing.T) {
	dir := buildBinaries(t)
	cmd := exec.CommandContext(t.Context(), filepath.Join(dir, "llmfleet-bench"), "-duration", "100ms", "-rounds", "1", "-concurrency", "1,64",
		"-variant", "--access-log=false", "-variant", "bare="+filepath.Join(dir, "llmfleet-bench"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatal(err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var rep benchReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("last line is not the JSON report: %v\n%s", err, out.String())
	}
	if len(rep.Rows) != 10 || len(rep.Goals) != 3 || rep.Rows[3].Target != "serve --access-log=false" ||
		rep.Rows[4].Target != "bare "+filepath.Join(dir, "llmfleet-bench") {
		t.Fatalf("report: %+v\n%s", rep, out.String())
	}
	for _, r := range rep.Rows {
		if r.Errors != 0 || r.Requests == 0 {
			t.Fatalf("%s at %d callers: %d requests, %d errors (%s)", r.Target, r.Concurrency, r.Requests, r.Errors, r.FirstError)
		}
		if r.Target != directTarget && r.CPUus <= 0 && r.Concurrency == 64 {
			t.Errorf("%s at %d callers: no CPU per request measured", r.Target, r.Concurrency)
		}
	}
	if !strings.Contains(out.String(), "Goals:") {
		t.Fatalf("no goals in the table:\n%s", out.String())
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

// TestBenchRun checks llmfleet-bench's exit codes and that it refuses
// stray arguments.
func TestBenchRun(t *testing.T) {
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
