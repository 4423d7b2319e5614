package openaiemu_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmfleet/llmfleet/openaiemu"
)

func sdkClient(t *testing.T, s *openaiemu.Server) openai.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

func TestSDKChat(t *testing.T) {
	s := &openaiemu.Server{}
	c := sdkClient(t, s)
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-5-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Message.Content; got != "Answer to: hello there" {
		t.Errorf("content = %q", got)
	}
	if res.Object != "chat.completion" || res.ServiceTier != "default" || res.Usage.TotalTokens != res.Usage.PromptTokens+res.Usage.CompletionTokens {
		t.Errorf("completion = %+v", res)
	}
	if got := s.Stats().Billed["hello there"]; got != 1 {
		t.Errorf("billed = %d, want 1", got)
	}
}

func TestSDKChatStream(t *testing.T) {
	c := sdkClient(t, &openaiemu.Server{})
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "gpt-5-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream me")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "Answer to: stream me" {
		t.Errorf("content = %q", got)
	}
	if acc.Usage.TotalTokens == 0 {
		t.Error("no usage chunk")
	}
}

func TestSDKResponses(t *testing.T) {
	c := sdkClient(t, &openaiemu.Server{})
	res, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("what is up")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.OutputText(); got != "Answer to: what is up" {
		t.Errorf("output text = %q", got)
	}
	if res.Status != "completed" || res.Usage.TotalTokens == 0 {
		t.Errorf("response = %+v", res)
	}
}

// TestSDKResponsesStream: a streamed response names its id in
// response.created, streams its text, and ends with response.completed
// carrying the whole response, usage included.
func TestSDKResponsesStream(t *testing.T) {
	c := sdkClient(t, &openaiemu.Server{})
	stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("stream this")},
	})
	var createdID, text string
	var done responses.Response
	for stream.Next() {
		switch e := stream.Current(); e.Type {
		case "response.created":
			createdID = e.Response.ID
		case "response.output_text.delta":
			text += e.Delta
		case "response.completed":
			done = e.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if createdID == "" || done.ID != createdID || text != "Answer to: stream this" || done.OutputText() != text || done.Usage.TotalTokens == 0 {
		t.Fatalf("created %q, text %q, completed %+v", createdID, text, done)
	}
}

func TestSDKEmbeddings(t *testing.T) {
	c := sdkClient(t, &openaiemu.Server{})
	res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[1].Index != 1 || len(res.Data[0].Embedding) != openaiemu.Dimensions {
		t.Fatalf("embeddings = %+v", res.Data)
	}
	want := openaiemu.Vector("b")
	for i, v := range res.Data[1].Embedding {
		if v != want[i] {
			t.Fatalf("embedding[1] = %v, want %v", res.Data[1].Embedding, want)
		}
	}
}

func TestSDKFlex(t *testing.T) {
	refuse := false
	s := &openaiemu.Server{FlexUnavailable: func(string) bool { return refuse }}
	c := sdkClient(t, s)
	ask := func(model string) (*openai.ChatCompletion, error) {
		return c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:       model,
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("flex me")},
			ServiceTier: openai.ChatCompletionNewParamsServiceTierFlex,
		})
	}
	res, err := ask("o3")
	if err != nil {
		t.Fatal(err)
	}
	if res.ServiceTier != "flex" {
		t.Errorf("service tier = %q, want flex", res.ServiceTier)
	}
	var apiErr *openai.Error
	if _, err := ask("gpt-4o"); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "service_tier" {
		t.Errorf("flex on gpt-4o: err = %v", err)
	}
	refuse = true
	if _, err := ask("o3"); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != "resource_unavailable" {
		t.Errorf("flex refused: err = %v", err)
	}
	st := s.Stats()
	if st.FlexRefused != 1 || st.Billed["flex me"] != 1 {
		t.Errorf("stats = %+v, want 1 refused and 1 billed", st)
	}
}

func TestSDKUnauthorized(t *testing.T) {
	s := &openaiemu.Server{Keys: []string{"sk-other"}}
	c := sdkClient(t, s)
	_, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized || apiErr.Code != "invalid_api_key" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(apiErr.Message, "API key") {
		t.Errorf("message = %q", apiErr.Message)
	}
}
