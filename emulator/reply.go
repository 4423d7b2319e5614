package emulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/claudewire"
)

// directives are the test directives found in the last user text.
type directives struct {
	tool       bool
	errorType  string
	expire     bool
	slow       time.Duration
	turnaround time.Duration
	hasTurn    bool
}

var directiveRE = regexp.MustCompile(`\[(tool|expire|error:[a-z_]+|slow:[0-9a-zµ.]+|turnaround:[0-9a-zµ.]+)\]`)

func parseDirectives(text string) directives {
	var d directives
	for _, m := range directiveRE.FindAllStringSubmatch(text, -1) {
		name, arg, _ := strings.Cut(m[1], ":")
		switch name {
		case "tool":
			d.tool = true
		case "expire":
			d.expire = true
		case "error":
			d.errorType = arg
		case "slow":
			if v, err := time.ParseDuration(arg); err == nil {
				d.slow = v
			}
		case "turnaround":
			if v, err := time.ParseDuration(arg); err == nil {
				d.turnaround, d.hasTurn = v, true
			}
		}
	}
	return d
}

// directiveError is the error a [error:<type>] directive asks for.
func directiveError(t string) *apiError {
	e := &apiError{status: claudewire.StatusForType(t), typ: t, message: "emulated " + t + " (requested by the [error:" + t + "] directive)"}
	if t == "overloaded_error" {
		e.message = "Overloaded"
	}
	return e
}

// block is one content block of a reply.
type block struct {
	Type      string
	Text      string          // text
	Thinking  string          // thinking
	Signature string          // thinking
	ID, Name  string          // tool_use
	Input     json.RawMessage // tool_use
}

// MarshalJSON writes the block in the API's field order.
func (b block) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case "thinking":
		return json.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{b.Type, b.Thinking, b.Signature})
	case "tool_use":
		return json.Marshal(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, b.Input})
	default:
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text})
	}
}

// reply is the model's answer to a request, before usage.
type reply struct {
	id           string
	model        string
	content      []block
	stopReason   string
	stopSequence *string
	outputTokens int64
}

// buildReply computes the deterministic reply to p: a pure function of the
// request body. Its blocks are a thinking block when thinking is on, the
// answer's text cut at the first stop sequence, and a tool_use block when
// a tool is called and no stop sequence cut the text, all truncated where
// max_tokens runs out.
func buildReply(p *params) *reply {
	seed := p.digest
	r := &reply{id: "msg_01" + idText("msg|"+seed), model: p.model, stopReason: "end_turn"}
	if p.maxTokens == 0 {
		r.stopReason = "max_tokens"
		r.content = []block{}
		return r
	}
	user := p.lastUserText()
	var blocks []block
	if p.thinking == "enabled" || p.thinking == "adaptive" {
		blocks = append(blocks, thinkingBlock(seed, user))
	}
	text := "Answer to: " + user
	toolBlock := toolCall(p, parseDirectives(user), seed, user)
	if toolBlock != nil {
		r.stopReason = "tool_use"
	}
	if i, seq := firstStop(text, p.stopSequences); i >= 0 {
		text = text[:i]
		toolBlock = nil
		r.stopReason, r.stopSequence = "stop_sequence", &seq
	}
	if text != "" {
		blocks = append(blocks, block{Type: "text", Text: text})
	}
	if toolBlock != nil {
		blocks = append(blocks, *toolBlock)
	}
	if outputTokens(blocks) > p.maxTokens {
		blocks = truncate(blocks, p.maxTokens)
		r.stopReason = "max_tokens"
		r.stopSequence = nil
	}
	if blocks == nil {
		blocks = []block{}
	}
	r.content = blocks
	r.outputTokens = outputTokens(blocks)
	return r
}

// thinkingBlock is the thinking block of the reply to the request of
// digest seed whose last user text is user.
func thinkingBlock(seed, user string) block {
	sig := sha256.Sum256([]byte("signature|" + seed))
	return block{Type: "thinking", Thinking: "Thinking about: " + user,
		Signature: base64.StdEncoding.EncodeToString(append(sig[:], sig[:]...))}
}

// toolCall is the tool_use block of the reply to p, or nil when it calls
// no tool: it calls the first tool (or the one tool_choice names) when
// tool_choice forces a tool or directive d asks for one.
func toolCall(p *params, d directives, seed, user string) *block {
	if len(p.tools) == 0 || p.toolChoice == "none" || !(d.tool || p.toolChoice == "any" || p.toolChoice == "tool") {
		return nil
	}
	name := p.tools[0].name
	if p.toolChoice == "tool" {
		name = p.toolName
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]string{"query": user})
	return &block{Type: "tool_use", ID: "toolu_01" + idText("tool|"+seed), Name: name,
		Input: bytes.TrimSpace(in.Bytes())}
}

// firstStop returns where the earliest of the stop sequences occurs in
// text and which one it is (the first listed of those that occur there),
// or -1: a stop sequence cuts the text and everything after it.
func firstStop(text string, stops []string) (int, string) {
	best, seq := -1, ""
	for _, ss := range stops {
		if ss == "" {
			continue
		}
		if i := strings.Index(text, ss); i >= 0 && (best < 0 || i < best) {
			best, seq = i, ss
		}
	}
	return best, seq
}

// truncate cuts blocks where maxTokens of output run out: text and
// thinking within the budget's bytes, a tool_use block whole or not at
// all.
func truncate(blocks []block, maxTokens int64) []block {
	budget := 4*maxTokens - 1
	var kept []block
	for _, b := range blocks {
		if budget <= 0 {
			break
		}
		switch b.Type {
		case "thinking":
			b.Thinking = cut(b.Thinking, &budget)
		case "text":
			b.Text = cut(b.Text, &budget)
		case "tool_use":
			if int64(len(b.Input)) > budget {
				budget = 0
				continue
			}
			budget -= int64(len(b.Input))
		}
		kept = append(kept, b)
	}
	return kept
}

// cut returns the longest prefix of s within *budget bytes, ending on a
// rune boundary, and takes its length from *budget.
func cut(s string, budget *int64) string {
	if int64(len(s)) <= *budget {
		*budget -= int64(len(s))
		return s
	}
	n := int(*budget)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	*budget = 0
	return s[:n]
}

// outputTokens counts a reply's output tokens: a quarter of its characters
// (thinking, text and tool input JSON), plus one.
func outputTokens(blocks []block) int64 {
	n := 0
	for _, b := range blocks {
		n += len(b.Thinking) + len(b.Text) + len(b.Input)
	}
	return int64(n/4 + 1)
}

// ReplyText returns the text of the text block of the emulator's reply to
// the create-message body: "Answer to: " followed by the text of the last
// user message (its string content, or its text blocks and the text of its
// tool_result blocks joined by "\n"), cut by stop_sequences and max_tokens
// as the reply is. It returns an error, in the API's words, when the body
// is not a valid request.
func ReplyText(body []byte) (string, error) {
	p, e := parseParams(body, modeSync)
	if e != nil {
		return "", e
	}
	for _, b := range buildReply(p).content {
		if b.Type == "text" {
			return b.Text, nil
		}
	}
	return "", nil
}

// MessageID returns the id of the emulator's reply to the create-message
// body: "msg_01" followed by 22 base-62 characters of a hash of the body
// (ignoring its layout and its "stream" member), or "" if the body is not a
// JSON object.
func MessageID(body []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top == nil {
		return ""
	}
	return "msg_01" + idText("msg|"+digest(top))
}

// usageJSON is the usage object of a Message.
type usageJSON struct {
	InputTokens              int64             `json:"input_tokens"`
	CacheCreationInputTokens int64             `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64             `json:"cache_read_input_tokens"`
	CacheCreation            cacheCreationJSON `json:"cache_creation"`
	OutputTokens             int64             `json:"output_tokens"`
	ServiceTier              string            `json:"service_tier"`
	// InferenceGeo is where the answer was computed; real answers to
	// requests that ask for no region say "not_available".
	InferenceGeo string `json:"inference_geo"`
}

type cacheCreationJSON struct {
	Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
}

func makeUsage(in cachesim.Usage, output int64, tier string) usageJSON {
	return usageJSON{
		InputTokens:              in.Input,
		CacheCreationInputTokens: in.Writes(),
		CacheReadInputTokens:     in.CacheRead,
		CacheCreation:            cacheCreationJSON{Ephemeral5m: in.Write5m, Ephemeral1h: in.Write1h},
		OutputTokens:             output,
		ServiceTier:              tier,
		InferenceGeo:             "not_available",
	}
}

// messageJSON is the Message object, with the members of real answers
// (no container member: real answers have none).
type messageJSON struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []block         `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	StopDetails  json.RawMessage `json:"stop_details"`
	Usage        usageJSON       `json:"usage"`
}

var jsonNull = json.RawMessage("null")

func (r *reply) message(u usageJSON) messageJSON {
	sr := r.stopReason
	return messageJSON{ID: r.id, Type: "message", Role: "assistant", Model: r.model, Content: r.content,
		StopReason: &sr, StopSequence: r.stopSequence, StopDetails: jsonNull, Usage: u}
}

// InputTokens returns the input tokens the emulator counts for the
// create-message body before any caching (what POST
// /v1/messages/count_tokens answers): the sum over the prompt's blocks of
// ceil(JSON bytes / 4), at least 1.
func InputTokens(body []byte) (int64, error) {
	p, e := parseParams(body, modeSync)
	if e != nil {
		return 0, e
	}
	fp, e := promptBlocks(p)
	if e != nil {
		return 0, e
	}
	return max(fp.total, 1), nil
}
