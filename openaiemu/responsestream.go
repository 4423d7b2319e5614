package openaiemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet/sse"
)

// The events of a streamed POST /v1/responses, members in the order the
// API writes them ("type" and "sequence_number" first).
type (
	evResponse struct {
		Type           string         `json:"type"`
		SequenceNumber int            `json:"sequence_number"`
		Response       responseObject `json:"response"`
	}
	evOutputItem struct {
		Type           string         `json:"type"`
		SequenceNumber int            `json:"sequence_number"`
		OutputIndex    int            `json:"output_index"`
		Item           responseOutput `json:"item"`
	}
	evContentPart struct {
		Type           string          `json:"type"`
		SequenceNumber int             `json:"sequence_number"`
		ItemID         string          `json:"item_id"`
		OutputIndex    int             `json:"output_index"`
		ContentIndex   int             `json:"content_index"`
		Part           responseContent `json:"part"`
	}
	evTextDelta struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Delta          string `json:"delta"`
		Logprobs       []any  `json:"logprobs"`
		// Obfuscation pads the event's length, as the API does to blur
		// the size of the delta.
		Obfuscation string `json:"obfuscation"`
	}
	evTextDone struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Text           string `json:"text"`
		Logprobs       []any  `json:"logprobs"`
	}
)

// streamResponse answers a streamed POST /v1/responses with the events
// the API sends for done, a one-message answer: response.created and
// response.in_progress (the response in progress: no output, usage null),
// the message item and its text part opened, a response.output_text.delta
// per word of answer, the text, part and item closed, and
// response.completed carrying done whole. The model, the usage and the
// service tier are members of the response in those events, never of the
// event itself.
func streamResponse(w http.ResponseWriter, done responseObject, answer string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	seq := 0
	event := func(typ string, ev any) {
		b, _ := json.Marshal(ev)
		w.Write(sse.AppendEvent(nil, typ, b))
		seq++
	}
	open := done
	open.Status, open.Output, open.Usage = "in_progress", []responseOutput{}, nil
	event("response.created", evResponse{"response.created", seq, open})
	event("response.in_progress", evResponse{"response.in_progress", seq, open})

	item := done.Output[0]
	part := item.Content[0]
	emptyItem := item
	emptyItem.Status, emptyItem.Content = "in_progress", []responseContent{}
	event("response.output_item.added", evOutputItem{"response.output_item.added", seq, 0, emptyItem})
	emptyPart := part
	emptyPart.Text = ""
	event("response.content_part.added", evContentPart{"response.content_part.added", seq, item.ID, 0, 0, emptyPart})
	for i, word := range strings.SplitAfter(answer, " ") {
		event("response.output_text.delta", evTextDelta{"response.output_text.delta", seq, item.ID, 0, 0, word, []any{},
			obfuscation(item.ID, i, len(word))})
	}
	event("response.output_text.done", evTextDone{"response.output_text.done", seq, item.ID, 0, 0, answer, []any{}})
	event("response.content_part.done", evContentPart{"response.content_part.done", seq, item.ID, 0, 0, part})
	event("response.output_item.done", evOutputItem{"response.output_item.done", seq, 0, item})
	event("response.completed", evResponse{"response.completed", seq, done})
}

// obfuscation returns the padding of the i-th delta of an item: letters
// and digits derived from the item, so that every delta event is about as
// long as the longest.
func obfuscation(itemID string, i, deltaLen int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	h := hashID("", itemID, fmt.Sprint(i))
	n := max(16-deltaLen, 1)
	var b strings.Builder
	for j := range n {
		b.WriteByte(alphabet[int(h[j%len(h)])%len(alphabet)])
	}
	return b.String()
}
