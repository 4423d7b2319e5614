package proxy

import (
	"strings"
	"testing"
)

// TestLongAnswersUsageRead: a JSON answer longer than a tap keeps whole
// (an inline image of Gemini's, many embeddings of OpenAI's) still has
// its usage read, in pieces as the reverse proxy passes them on.
func TestLongAnswersUsageRead(t *testing.T) {
	pad := strings.Repeat("x", maxGeminiTap+maxKept)
	gemini := `{"candidates":[{"content":{"parts":[{"inlineData":{"data":"` + pad + `"}}]}}],` +
		`"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":1290,"totalTokenCount":1302},"modelVersion":"gemini-2.5-flash-image"}`
	var g geminiTap
	writeInPieces(func(p []byte) { g.Write(p) }, gemini)
	if a := g.answer(); a.Usage.InputTokens != 12 || a.Usage.OutputTokens != 1290 || a.Model != "gemini-2.5-flash-image" {
		t.Errorf("Gemini: %+v", a)
	}
	openai := `{"object":"list","data":[{"embedding":"` + pad + `"}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8000,"total_tokens":8000}}`
	o := openAITap{}
	writeInPieces(o.write, openai)
	if a := o.result(); a.Usage.InputTokens != 8000 || a.Model != "text-embedding-3-small" {
		t.Errorf("OpenAI: %+v", a)
	}
}

// writeInPieces writes s to w in pieces of 32 KiB, as a reverse proxy
// copies.
func writeInPieces(w func([]byte), s string) {
	for len(s) > 0 {
		n := min(len(s), 32<<10)
		w([]byte(s[:n]))
		s = s[n:]
	}
}
