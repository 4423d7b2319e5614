package openaiemu_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/llmfleet/llmfleet/openaiemu"
)

// post sends a JSON body to the emulator over loopback HTTP.
func post(t *testing.T, s *openaiemu.Server, path, body string) *http.Response {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("Content-Type", "application/json")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// encoding_format "base64" answers each vector as the base64 of its
// little-endian float32s, which the official SDK decodes to the same
// values as the float answer, to float32 precision.
func TestEmbeddingsBase64(t *testing.T) {
	res := post(t, &openaiemu.Server{}, "/v1/embeddings", `{"model":"text-embedding-3-small","input":["a","b"],"encoding_format":"base64"}`)
	var list struct {
		Data []struct {
			Index     int
			Embedding string
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil || res.StatusCode != 200 || len(list.Data) != 2 {
		t.Fatalf("%d %v %+v", res.StatusCode, err, list)
	}
	raw, err := base64.StdEncoding.DecodeString(list.Data[1].Embedding)
	if err != nil || len(raw) != 4*openaiemu.Dimensions {
		t.Fatalf("%q: %v, %d bytes", list.Data[1].Embedding, err, len(raw))
	}
	want := openaiemu.Vector("b")
	for i := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != float32(want[i]) {
			t.Fatalf("value %d: %v, want %v", i, got, float32(want[i]))
		}
	}

	c := sdkClient(t, &openaiemu.Server{})
	sdk, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model:          "text-embedding-3-small",
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range sdk.Data[1].Embedding {
		if v != float64(float32(want[i])) {
			t.Fatalf("SDK decoded %v, want %v to float32 precision", sdk.Data[1].Embedding, want)
		}
	}
	if got := openaiemu.Base64Vector([]float64{0.5, -0.25}); got != "AAAAPwAAgL4=" {
		t.Errorf("Base64Vector = %q", got)
	}
	if res := post(t, &openaiemu.Server{}, "/v1/embeddings", `{"model":"m","input":"x","encoding_format":"hex"}`); res.StatusCode != 400 {
		t.Errorf("encoding_format hex: %d", res.StatusCode)
	}
}

// A streamed /v1/responses sends the API's event sequence, numbered from
// 0, each event named as its type; model, usage and service_tier sit under
// response, never at the top of an event, and the usage only in
// response.completed.
func TestResponsesStreamShape(t *testing.T) {
	res := post(t, &openaiemu.Server{}, "/v1/responses", `{"model":"gpt-5","input":"three word prompt","stream":true}`)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	var types []string
	var text string
	var completed map[string]any
	sc := bufio.NewScanner(res.Body)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if ev["type"] != name || ev["sequence_number"] != float64(len(types)) {
			t.Fatalf("event %q: %s", name, data)
		}
		if !strings.HasPrefix(data, `{"type":"`+name+`","sequence_number":`) {
			t.Errorf("members out of order: %s", data)
		}
		for _, k := range []string{"usage", "model", "service_tier"} {
			if _, ok := ev[k]; ok {
				t.Errorf("%s at the top of %s", k, data)
			}
		}
		types = append(types, name)
		switch name {
		case "response.created", "response.in_progress":
			r := ev["response"].(map[string]any)
			if r["usage"] != nil || r["model"] != "gpt-5" || r["status"] != "in_progress" {
				t.Errorf("%s: %s", name, data)
			}
		case "response.output_text.delta":
			text += ev["delta"].(string)
			if ev["obfuscation"] == "" {
				t.Errorf("no obfuscation: %s", data)
			}
		case "response.completed":
			completed = ev["response"].(map[string]any)
		}
	}
	deltas := strings.Count("Answer to: three word prompt", " ") + 1
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	for range deltas {
		want = append(want, "response.output_text.delta")
	}
	want = append(want, "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed")
	if !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	if text != "Answer to: three word prompt" {
		t.Errorf("text %q", text)
	}
	u, _ := completed["usage"].(map[string]any)
	if completed["status"] != "completed" || completed["model"] != "gpt-5" || completed["service_tier"] != "default" ||
		u == nil || u["input_tokens"] != float64(3) || u["total_tokens"] != u["input_tokens"].(float64)+u["output_tokens"].(float64) {
		t.Errorf("completed %v", completed)
	}
}

// A streamed chat completion with include_usage has "usage": null on every
// chunk, then a last chunk with no choices and the whole usage; without
// it, no usage member. Every chunk carries obfuscation and service_tier.
func TestChatStreamShape(t *testing.T) {
	chunks := func(body string) []map[string]any {
		res := post(t, &openaiemu.Server{}, "/v1/chat/completions", body)
		var out []map[string]any
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatal(err)
			}
			if m["obfuscation"] == nil || m["service_tier"] != "default" {
				t.Errorf("chunk %s", data)
			}
			out = append(out, m)
		}
		return out
	}
	with := chunks(`{"model":"gpt-4.1","messages":[{"role":"user","content":"two words"}],"stream":true,"stream_options":{"include_usage":true}}`)
	last := with[len(with)-1]
	for _, c := range with[:len(with)-1] {
		if u, ok := c["usage"]; !ok || u != nil {
			t.Errorf("chunk usage %v, %v; want null", u, ok)
		}
	}
	if u, _ := last["usage"].(map[string]any); len(last["choices"].([]any)) != 0 || u == nil || u["total_tokens"] == nil {
		t.Errorf("last chunk %v", last)
	}
	for _, c := range chunks(`{"model":"gpt-4.1","messages":[{"role":"user","content":"two words"}],"stream":true}`) {
		if _, ok := c["usage"]; ok {
			t.Errorf("a usage member without include_usage: %v", c)
		}
	}
}
