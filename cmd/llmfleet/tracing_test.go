package main

import (
	"context"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmfleet/llmfleet/emulator"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes each POST
// /v1/traces (protobuf) and keeps its spans and resources' service names.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
	bad      []string
}

func (rc *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		rc.bad = append(rc.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		http.Error(w, "not OTLP/HTTP traces", http.StatusNotFound)
		return
	}
	if err := proto.Unmarshal(body, &req); err != nil {
		rc.bad = append(rc.bad, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				rc.services = append(rc.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// TestServeExportsTracesOverOTLP runs "llmfleet serve" with
// OTEL_EXPORTER_OTLP_ENDPOINT naming a receiver in the test: a batched
// call carrying a traceparent is exported over OTLP/HTTP protobuf at
// shutdown at the latest, the proxy's span in the caller's trace, the
// dispatcher's request and batch spans with it, under service.name
// llmfleet.
func TestServeExportsTracesOverOTLP(t *testing.T) {
	rc := &otlpReceiver{}
	col := httptest.NewServer(rc)
	defer col.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
	}

	emuTS := httptest.NewServer(&emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }})
	defer emuTS.Close()
	cfg := writeFile(t, "anthropic-url: "+emuTS.URL+"\n"+
		"batch-window: 5ms\npoll-interval: 2ms\nmax-poll-interval: 5ms\nturnaround-prior: 10ms\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0", "--db", t.TempDir() + "/state.db"}, out, io.Discard)
	}()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	}
	base := strings.Fields(strings.TrimPrefix(line, "llmfleet serving on "))[0]

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(
		`{"model":"claude-test","max_tokens":50,"messages":[{"role":"user","content":"traced"}]}`))
	req.Header.Set("X-Api-Key", "sk-otlp")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Llmfleet-Latency-Budget-Ms", "600000")
	req.Header.Set("Traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Llmfleet-Route") != "batch" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	batchID := resp.Header.Get("Llmfleet-Batch-Id")

	cancel() // shutdown flushes the spans still pending
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("bad exports: %v", rc.bad)
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range rc.spans {
		byName[s.Name] = s
	}
	call, reqSpan, create := byName["chat claude-test"], byName["llmfleet.request"], byName["llmfleet.batch.create"]
	if call == nil || reqSpan == nil || create == nil {
		t.Fatalf("spans exported: %v", spanNames(rc.spans))
	}
	if hex.EncodeToString(call.TraceId) != traceID || hex.EncodeToString(call.ParentSpanId) != "00f067aa0ba902b7" {
		t.Errorf("call span in trace %x under %x", call.TraceId, call.ParentSpanId)
	}
	if string(reqSpan.ParentSpanId) != string(call.SpanId) {
		t.Errorf("request span's parent %x, want the call's %x", reqSpan.ParentSpanId, call.SpanId)
	}
	if len(create.Links) != 1 || string(create.Links[0].SpanId) != string(reqSpan.SpanId) {
		t.Errorf("create links %v", create.Links)
	}
	got := map[string]string{}
	for _, kv := range call.Attributes {
		got[kv.Key] = kv.GetValue().GetStringValue()
	}
	if got["llmfleet.route"] != "batch" || got["llmfleet.batch_id"] != batchID || got["gen_ai.provider.name"] != "anthropic" {
		t.Errorf("call attributes %v", call.Attributes)
	}
	for _, s := range rc.services {
		if s != "llmfleet" {
			t.Errorf("service.name %q", s)
		}
	}
}

func spanNames(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
