package proxy_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/genai"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// TestTraceOpenAIAndGeminiFaces: the sync calls of the OpenAI and
// Gemini faces are spans too, under the GenAI names of their providers
// and operations, with the usage their answers' taps read.
func TestTraceOpenAIAndGeminiFaces(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	st := &tracedStack{exp: exp}

	d, u := openAIEngine(t, &openaiemu.Server{BatchTurnaround: 30 * time.Millisecond})
	srv := &proxy.Server{Submitter: d, OpenAIUpstream: u, Observe: func(llmfleet.LedgerEntry) {},
		TracerProvider: tp, TracePrice: microPrice}
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(ps.Close)
	oc := sdk(ps.URL+"/openai/v1", "sk-o")
	if _, err := oc.Chat.Completions.New(t.Context(), ask("hello")); err != nil {
		t.Fatal(err)
	}
	s := named(st.await(t, has("chat gpt-4.1", 1)), "chat gpt-4.1")[0]
	wantAttrs(t, s, map[string]string{"gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat",
		"gen_ai.request.model": "gpt-4.1", "llmfleet.route": "sync"})
	if a := attrs(s); a["gen_ai.usage.output_tokens"].AsInt64() <= 0 || a[attribute.Key("llmfleet.cost_usd")].AsFloat64() <= 0 {
		t.Errorf("OpenAI span without usage or cost: %v", s.Attributes)
	}

	gs := newGeminiStack(t, &geminiemu.Server{Keys: []string{"k1"}}, &proxy.Server{TracerProvider: tp, TracePrice: microPrice})
	if _, err := gs.client(t, "k1", "", nil).Models.GenerateContent(t.Context(), "gemini-2.5-flash", genai.Text(geminiPrompt), nil); err != nil {
		t.Fatal(err)
	}
	s = named(st.await(t, has("generate_content gemini-2.5-flash", 1)), "generate_content gemini-2.5-flash")[0]
	wantAttrs(t, s, map[string]string{"gen_ai.provider.name": "gcp.gemini", "gen_ai.operation.name": "generate_content",
		"gen_ai.request.model": "gemini-2.5-flash", "llmfleet.route": "sync"})
	if attrs(s)["gen_ai.usage.input_tokens"].AsInt64() <= 0 {
		t.Errorf("Gemini span without usage: %v", s.Attributes)
	}
}
