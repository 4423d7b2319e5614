package geminiemu

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
)

// configMembers are the members generationConfig may have.
var configMembers = []string{"stopSequences", "responseMimeType", "responseSchema", "responseJsonSchema",
	"responseModalities", "candidateCount", "maxOutputTokens", "temperature", "topP", "topK", "seed",
	"presencePenalty", "frequencyPenalty", "responseLogprobs", "logprobs", "enableEnhancedCivicAnswers",
	"speechConfig", "thinkingConfig", "imageConfig", "mediaResolution", "audioTranscriptionConfig"}

// requestMembers are the members a GenerateContentRequest may have (those
// the Go SDK sends to the Gemini API, and the model).
var requestMembers = []string{"model", "contents", "systemInstruction", "generationConfig", "safetySettings",
	"tools", "toolConfig", "cachedContent", "serviceTier", "labels", "store", "continuationToken"}

// call is a checked generateContent request.
type call struct {
	req      geminiwire.GenerateContentRequest
	tier     string // the tier asked: standard, flex or priority
	thinking bool
	thoughts bool // includeThoughts: a thought summary part
}

// unknownMember returns the first member of obj not in known, if any.
func unknownMember(obj []byte, known []string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(obj, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			return k
		}
	}
	return ""
}

// check reads and checks a request body as the API does; msg is the
// INVALID_ARGUMENT message of a refused one.
func check(body []byte, model string) (c call, msg string) {
	if k := unknownMember(body, requestMembers); k != "" {
		return c, `Invalid JSON payload received. Unknown name "` + k + `": Cannot find field.`
	}
	if err := json.Unmarshal(body, &c.req); err != nil {
		return c, "Invalid JSON payload received. " + err.Error()
	}
	if c.req.Model != "" && geminiwire.ModelName(c.req.Model) != model {
		return c, "The model in the request body (" + c.req.Model + ") does not match the model of the URL (models/" + model + ")."
	}
	if len(c.req.Contents) == 0 {
		return c, "* GenerateContentRequest.contents: contents is not specified\n"
	}
	for i, ct := range c.req.Contents {
		if ct.Role != "" && ct.Role != "user" && ct.Role != "model" {
			return c, "Please use a valid role: user, model."
		}
		if len(ct.Parts) == 0 {
			return c, "* GenerateContentRequest.contents[" + strconv.Itoa(i) + "].parts: contents.parts must not be empty.\n"
		}
	}
	switch t := strings.ToLower(c.req.ServiceTier); t {
	case "", "unspecified", "standard":
		c.tier = geminiwire.TierStandard
	case "flex", "priority":
		c.tier = t
	default:
		return c, `Invalid value at 'service_tier', "` + c.req.ServiceTier + `"`
	}
	c.thinking = strings.HasPrefix(model, "gemini-2.5") || strings.HasPrefix(model, "gemini-3")
	if len(c.req.GenerationConfig) > 0 {
		if k := unknownMember(c.req.GenerationConfig, configMembers); k != "" {
			return c, `Invalid JSON payload received. Unknown name "` + k + `" at 'generation_config': Cannot find field.`
		}
		var gc struct {
			ThinkingConfig *struct {
				ThinkingBudget  *int `json:"thinkingBudget"`
				IncludeThoughts bool `json:"includeThoughts"`
			} `json:"thinkingConfig"`
		}
		if err := json.Unmarshal(c.req.GenerationConfig, &gc); err != nil {
			return c, "Invalid JSON payload received. generation_config: " + err.Error()
		}
		if tc := gc.ThinkingConfig; tc != nil {
			c.thinking = c.thinking && (tc.ThinkingBudget == nil || *tc.ThinkingBudget != 0)
			c.thoughts = c.thinking && tc.IncludeThoughts
		}
	}
	return c, ""
}

// lastUser returns the text of the last user turn.
func lastUser(cs []geminiwire.Content) string {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Role == "user" || cs[i].Role == "" {
			return cs[i].Text()
		}
	}
	return ""
}

func words(s string) int64 { return int64(max(1, len(strings.Fields(s)))) }

// directedStatus returns the canonical status a prompt's "[error:STATUS]"
// asks for, if any.
func directedStatus(prompt string) string {
	_, rest, ok := strings.Cut(prompt, "[error:")
	if !ok {
		return ""
	}
	st, _, ok := strings.Cut(rest, "]")
	if !ok {
		return ""
	}
	return st
}

// reply answers a checked call of key for model, served in tier.
func (s *Server) reply(key, model string, c call, tier string) geminiwire.GenerateContentResponse {
	prompt := lastUser(c.req.Contents)
	answer := "Answer to: " + prompt
	var in int64
	for _, ct := range c.req.Contents {
		in += words(ct.Text())
	}
	u := &geminiwire.UsageMetadata{CandidatesTokenCount: words(answer), ServiceTier: tier}
	if sys := c.req.SystemInstruction.Text(); sys != "" {
		in += words(sys)
		s.mu.Lock()
		if s.seen == nil {
			s.seen = map[string]bool{}
		}
		k := key + "\x00" + model + "\x00" + sys
		if s.seen[k] {
			u.CachedContentTokenCount = words(sys)
		}
		s.seen[k] = true
		s.mu.Unlock()
	}
	u.PromptTokenCount = in
	parts := []geminiwire.Part{{Text: answer}}
	if c.thinking {
		u.ThoughtsTokenCount = 2 * u.CandidatesTokenCount
	}
	if c.thoughts {
		parts = append([]geminiwire.Part{{Text: "Thinking about: " + prompt, Thought: true}}, parts...)
	}
	u.TotalTokenCount = u.PromptTokenCount + u.CandidatesTokenCount + u.ThoughtsTokenCount
	s.count(func(st *Stats) { st.Billed[prompt]++ })
	h := sha256.Sum256([]byte(key + "\x00" + model + "\x00" + prompt + "\x00" + s.now().String()))
	return geminiwire.GenerateContentResponse{
		Candidates:    []geminiwire.Candidate{{Content: &geminiwire.Content{Role: "model", Parts: parts}, FinishReason: "STOP"}},
		UsageMetadata: u, ModelVersion: model, ResponseID: base64.RawURLEncoding.EncodeToString(h[:15]),
	}
}

// generate serves generateContent and streamGenerateContent.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, model string, stream bool) {
	body := readBody(w, r)
	if body == nil {
		return
	}
	c, msg := check(body, model)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	if st := directedStatus(lastUser(c.req.Contents)); st != "" {
		code := geminiwire.HTTPStatus(st)
		writeError(w, code, "emulated "+st+" (requested by the [error:"+st+"] directive)", s.retryInfo(code)...)
		return
	}
	if c.tier == geminiwire.TierFlex && !s.flex(w, r, model) {
		return
	}
	resp := s.reply(apiKey(r), model, c, c.tier)
	w.Header().Set(geminiwire.TierHeader, c.tier)
	if !stream {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	full, _ := json.Marshal(resp)
	events, _ := geminiwire.AppendStream(nil, full)
	if r.URL.Query().Get("alt") == "sse" {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.Write(events)
		return
	}
	// Without alt=sse the API streams a JSON array of the chunks.
	var arr bytes.Buffer
	arr.WriteByte('[')
	for i, ev := range bytes.Split(bytes.TrimSuffix(events, []byte("\r\n\r\n")), []byte("\r\n\r\n")) {
		if i > 0 {
			arr.WriteString(",\r\n")
		}
		arr.Write(bytes.TrimPrefix(ev, []byte("data: ")))
	}
	arr.WriteByte(']')
	writeJSON(w, http.StatusOK, json.RawMessage(arr.Bytes()))
}

// flex decides a flex call: refused for a model without the tier, shed as
// Shed says (not billed), or served after FlexLatency (FlexDelay's) on the
// Clock.
func (s *Server) flex(w http.ResponseWriter, r *http.Request, model string) bool {
	if !s.flexModel(model) {
		writeError(w, http.StatusBadRequest, "The flex service_tier is not supported for models/"+model+".")
		return false
	}
	if s.Shed != nil {
		if code := s.Shed(model); code != 0 {
			s.count(func(st *Stats) { st.Shed++ })
			w.Header().Set(geminiwire.TierHeader, geminiwire.TierFlex)
			msg := "The model is overloaded. Please try again later."
			if code == http.StatusTooManyRequests {
				msg = "Resource has been exhausted (e.g. check quota)."
			}
			writeError(w, code, msg, s.retryInfo(code)...)
			return false
		}
	}
	wait := s.FlexLatency
	if s.FlexDelay != nil {
		wait = s.FlexDelay(model)
	}
	if wait > 0 {
		if err := llmfleet.Sleep(r.Context(), s.clock(), wait); err != nil {
			return false
		}
	}
	return true
}
