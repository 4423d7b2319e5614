package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet/jsonmember"
)

// This file keeps the OpenAI face's responses apart in proxy-held-key
// mode, where every client's /v1/responses call is made under the one
// upstream key: the API lets a call continue from any response the key
// made (previous_response_id), so the proxy records which client every
// response it hands out is for, in Server.BatchOwners as files and
// batches are, and refuses a call that continues from a response that is
// not the caller's.
//
// A conversation (the conversation parameter) cannot be created through
// the proxy in this mode (/v1/conversations is not passed on), so no
// conversation is ever a client's own: a call naming one is refused as
// one naming an unknown conversation.

// responseRefs returns the refusal of a /v1/responses call of the client
// named client whose body continues from what is not the client's: a
// previous_response_id of a response not recorded as the client's (404
// previous_response_not_found, as the API answers an unknown id), a
// response its prompt cache use is compared with
// (prompt_cache_options.comparison_response_id) or an input item not the
// client's (404), or any conversation (404 conversation_not_found). Every member of either name
// is checked, so that a body repeating one cannot show the proxy one
// value and the API another. It returns an error if an owner cannot be
// read.
func (b ownerBook) responseRefs(ctx context.Context, body []byte, client string) (*refusal, error) {
	ms, err := jsonmember.Members(body)
	if err != nil {
		return nil, nil // not an object: the API refuses it
	}
	for _, m := range ms {
		v := bytes.TrimSpace(m.Value(body))
		switch {
		case bytes.Equal(v, []byte("null")):
		case strings.EqualFold(m.Key, "previous_response_id"):
			var id string
			if json.Unmarshal(v, &id) != nil {
				continue // not a string: the API refuses it
			}
			if owned, err := b.owns(ctx, id, client); err != nil || !owned {
				return &refusal{status: http.StatusNotFound, typ: "invalid_request_error", code: "previous_response_not_found",
					param: "previous_response_id", msg: "Previous response with id '" + id + "' not found."}, err
			}
		case strings.EqualFold(m.Key, "prompt_cache_options"):
			// A response to compare the call's prompt cache use with: its
			// diagnostics tell whether it exists, what it was made with,
			// and how much of its prompt the call's shares.
			ids, _ := memberStrings(v, []string{"comparison_response_id"})
			for _, id := range ids {
				if owned, err := b.owns(ctx, id, client); err != nil || !owned {
					return &refusal{status: http.StatusNotFound, typ: "invalid_request_error", param: "prompt_cache_options.comparison_response_id",
						msg: "Response with id '" + id + "' not found."}, err
				}
			}
		case strings.EqualFold(m.Key, "conversation"):
			id := conversationID(v)
			return &refusal{status: http.StatusNotFound, typ: "invalid_request_error", code: "conversation_not_found",
				param: "conversation", msg: "Conversation with id '" + id + "' not found."}, nil
		case strings.EqualFold(m.Key, "input"):
			// An input item with an id is one the API has stored (a
			// reference to it, whose type may be left out, or an output
			// item given back): it must be one the client's answers named.
			if e, err := b.inputItems(ctx, v, client); e != nil || err != nil {
				return e, err
			}
		}
	}
	return nil, nil
}

// inputItems returns the refusal of a Responses input (v, a list of
// items) one of whose items has an id not recorded as the client's.
func (b ownerBook) inputItems(ctx context.Context, v []byte, client string) (*refusal, error) {
	items, err := jsonmember.Elements(v)
	if err != nil {
		return nil, nil // a string, or not JSON: no items
	}
	for _, it := range items {
		var ids []string
		jsonmember.Scan(it, func(k, v []byte) bool {
			if memberKey(k, "id") {
				ids = append(ids, stringsOf(v)...)
			}
			return true
		})
		for _, id := range ids {
			if owned, err := b.owns(ctx, id, client); err != nil || !owned {
				return &refusal{status: http.StatusNotFound, typ: "invalid_request_error", param: "input",
					msg: "Item with id '" + id + "' not found."}, err
			}
		}
	}
	return nil, nil
}

// conversationID returns the id a conversation parameter names: the
// string itself, or the id member of an object; else the raw value.
func conversationID(v []byte) string {
	var id string
	if json.Unmarshal(v, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(v, &obj) == nil && obj.ID != "" {
		return obj.ID
	}
	return string(v)
}

// openAIAnswerIDs returns what an answer of the OpenAI face (or one of
// its stream's events or chunks) names that a later call may name in
// turn: a response, its output items, the containers its code ran in and
// the files that code wrote (responseIDs); a chat completion's spoken
// answer. Only those places are read: an answer echoes much of its
// request (metadata, tools, text formats), which would otherwise make
// whatever a client wrote there its own.
func openAIAnswerIDs(data []byte) []string {
	var ev struct {
		responseShape
		Response   *responseShape  `json:"response"`
		Item       *responseItem   `json:"item"`
		Annotation *responseAnnote `json:"annotation"`
		Choices    []struct {
			Message *chatAudio `json:"message"`
			Delta   *chatAudio `json:"delta"` // a chunk's
		} `json:"choices"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return nil
	}
	ids := responseIDs(&ev.responseShape, ev.Response, ev.Item, ev.Annotation)
	for _, c := range ev.Choices {
		for _, m := range [...]*chatAudio{c.Message, c.Delta} {
			if m != nil && m.Audio != nil {
				ids = append(ids, m.Audio.ID)
			}
		}
	}
	return ids
}

// chatAudio is what openAIAnswerIDs reads of a chat completion's message:
// its spoken answer, which a later call may give back by id.
type chatAudio struct {
	Audio *struct {
		ID string `json:"id"`
	} `json:"audio"`
}

// responseIDs returns the ids a response event names: its response's (or
// the response's own, for a JSON answer), an output item's, an
// annotation's.
func responseIDs(own, response *responseShape, item *responseItem, annotation *responseAnnote) []string {
	var ids []string
	for _, r := range []*responseShape{own, response} {
		if r != nil && r.Object == "response" {
			ids = append(ids, r.ID)
			for _, it := range r.Output {
				ids = it.ids(ids)
			}
		}
	}
	if item != nil {
		ids = item.ids(ids)
	}
	if annotation != nil {
		ids = annotation.ids(ids)
	}
	return ids
}

// ownedResponses wraps the body of a 200 answer of the OpenAI face to the
// client named client so that what it names (openAIAnswerIDs) is
// recorded as the client's before the client can read it (ownedAnswer).
func (b ownerBook) ownedResponses(ctx context.Context, client string, res *http.Response) io.ReadCloser {
	return b.ownedAnswer(ctx, client, res, openAIAnswerIDs)
}

// responseShape is what responseIDs reads of a response.
type responseShape struct {
	ID     string         `json:"id"`
	Object string         `json:"object"`
	Output []responseItem `json:"output"`
}

// responseItem is what responseIDs reads of an output item.
type responseItem struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	ContainerID string `json:"container_id"`
	Content     []struct {
		Annotations []responseAnnote `json:"annotations"`
	} `json:"content"`
	Results []struct { // a file search's
		FileID string `json:"file_id"`
	} `json:"results"`
}

// responseAnnote is what responseIDs reads of an annotation.
type responseAnnote struct {
	Type        string `json:"type"`
	FileID      string `json:"file_id"`
	ContainerID string `json:"container_id"`
}

// ids appends the ids an annotation names to ids: a file a container
// wrote, cited (container_file_citation), and its container. A file
// cited from a file search (file_citation) is the operator's, read
// through a vector store: it is not the client's to have, only the
// citation to give back (citedPrefix).
func (a responseAnnote) ids(ids []string) []string {
	switch a.Type {
	case "container_file_citation":
		return append(ids, a.FileID, a.ContainerID)
	case "file_citation":
		return append(ids, citedPrefix+a.FileID)
	}
	return ids
}

// ids appends the ids the item names to ids.
func (it responseItem) ids(ids []string) []string {
	ids = append(ids, it.ID, it.ContainerID)
	for _, c := range it.Content {
		for _, a := range c.Annotations {
			ids = a.ids(ids)
		}
	}
	if it.Type == "file_search_call" {
		for _, r := range it.Results {
			ids = append(ids, citedPrefix+r.FileID)
		}
	}
	return ids
}

// wholeBody reads its body whole at the first Read, hands it to done, and
// then serves it.
type wholeBody struct {
	body io.ReadCloser
	done func([]byte)
	rest *bytes.Reader
	err  error
}

func (b *wholeBody) Read(p []byte) (int, error) {
	if b.rest == nil {
		all, err := io.ReadAll(b.body)
		b.rest, b.err = bytes.NewReader(all), err
		if err == nil {
			b.done(all)
		}
	}
	n, _ := b.rest.Read(p)
	if b.rest.Len() == 0 {
		if b.err != nil {
			return n, b.err
		}
		return n, io.EOF
	}
	return n, nil
}

func (b *wholeBody) Close() error { return b.body.Close() }

// tappedBody hands what it reads to tap before returning it.
type tappedBody struct {
	body io.ReadCloser
	tap  io.Writer
}

func (b *tappedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.tap.Write(p[:n])
	}
	return n, err
}

func (b *tappedBody) Close() error { return b.body.Close() }
