package geminiwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sse"
)

// Streamed is what a stream of GenerateContentResponse chunks adds up to.
type Streamed struct {
	// Text is the text of the first candidate, thoughts left out.
	Text string
	// FinishReason is the last one a chunk gave.
	FinishReason string
	// ResponseID and Model are the chunks' responseId and modelVersion.
	ResponseID, Model string
	// Usage is the last usage metadata a chunk carried (each carries the
	// usage so far); Tier its served tier.
	Usage llmfleet.Usage
	Tier  llmfleet.Tier
	// Chunks counts the chunks.
	Chunks int
}

// ReadStream reads the server-sent events of streamGenerateContent?alt=sse:
// each event's data is one GenerateContentResponse, given to fn (nil fn:
// none), and the stream's sum is returned. An event carrying Google's
// error envelope ends the stream with its *llmfleet.Error (a stream fails
// after its 200 that way); an event that is no JSON object, or a cut
// stream, with another error.
func ReadStream(r io.Reader, fn func(GenerateContentResponse) error) (Streamed, error) {
	var s Streamed
	rd := sse.NewReader(r)
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return s, fmt.Errorf("geminiwire: stream after %d chunks: %w", s.Chunks, err)
		}
		data := bytes.TrimSpace(ev.Data)
		if st, ok := ParseError(data); ok {
			return s, ErrorOf(HTTPStatus(st.Name()), data, nil, false)
		}
		var c GenerateContentResponse
		if len(data) == 0 || data[0] != '{' || json.Unmarshal(data, &c) != nil {
			return s, fmt.Errorf("geminiwire: stream chunk %d is not a GenerateContentResponse: %.80q", s.Chunks, data)
		}
		s.add(&c)
		if fn != nil {
			if err := fn(c); err != nil {
				return s, err
			}
		}
	}
}

func (s *Streamed) add(c *GenerateContentResponse) {
	s.Chunks++
	s.Text += c.Text()
	if len(c.Candidates) > 0 && c.Candidates[0].FinishReason != "" {
		s.FinishReason = c.Candidates[0].FinishReason
	}
	if c.ResponseID != "" {
		s.ResponseID = c.ResponseID
	}
	if c.ModelVersion != "" {
		s.Model = c.ModelVersion
	}
	if c.UsageMetadata != nil {
		s.Usage = c.UsageMetadata.Usage()
		if t := TierOf(c.UsageMetadata.ServiceTier); t != "" {
			s.Tier = t
		}
	}
}

// AppendStream appends to buf the events a GenerateContentResponse would
// have been streamed as: its first candidate's text in word-sized chunks,
// each a GenerateContentResponse with the answer's responseId and
// modelVersion, the last one with the finish reason and the usage
// metadata; data-only events ended by CRLF CRLF, as the API writes them.
// An error envelope is refused. A response without text (thoughts, function calls only) is one chunk,
// the whole response.
func AppendStream(buf []byte, body []byte) ([]byte, error) {
	var r struct {
		GenerateContentResponse
		Candidates []struct {
			Content      json.RawMessage `json:"content"`
			FinishReason string          `json:"finishReason"`
			Index        int             `json:"index"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return buf, fmt.Errorf("geminiwire: not a GenerateContentResponse: %w", err)
	}
	var typed GenerateContentResponse
	if err := json.Unmarshal(body, &typed); err != nil {
		return buf, fmt.Errorf("geminiwire: not a GenerateContentResponse: %w", err)
	}
	if _, isError := ParseError(body); isError {
		return buf, errors.New("geminiwire: an error envelope, not a GenerateContentResponse")
	}
	var c Content
	if len(r.Candidates) != 1 || json.Unmarshal(r.Candidates[0].Content, &c) != nil || !onlyText(c) {
		var compacted bytes.Buffer
		if err := json.Compact(&compacted, body); err != nil {
			return buf, err
		}
		return sse.AppendEventCRLF(buf, "", compacted.Bytes()), nil
	}
	words := strings.SplitAfter(c.Text(), " ")
	for i, w := range words {
		chunk := GenerateContentResponse{ModelVersion: r.ModelVersion, ResponseID: r.ResponseID,
			Candidates: []Candidate{{Content: &Content{Role: "model", Parts: []Part{{Text: w}}}, Index: r.Candidates[0].Index}}}
		if i == len(words)-1 {
			chunk.Candidates[0].FinishReason = r.Candidates[0].FinishReason
			chunk.UsageMetadata = r.UsageMetadata
		}
		b, err := json.Marshal(chunk)
		if err != nil {
			return buf, err
		}
		buf = sse.AppendEventCRLF(buf, "", b)
	}
	return buf, nil
}

// onlyText reports whether a content is text parts only, no thoughts.
func onlyText(c Content) bool {
	for _, p := range c.Parts {
		if p.Thought || p.Text == "" {
			return false
		}
	}
	return len(c.Parts) > 0
}
