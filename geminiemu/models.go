package geminiemu

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/llmfleet/llmfleet/geminiwire"
)

// modelObject is the API's Model, as far as the emulator fills it.
type modelObject struct {
	Name                       string   `json:"name"`
	Version                    string   `json:"version"`
	DisplayName                string   `json:"displayName"`
	InputTokenLimit            int      `json:"inputTokenLimit"`
	OutputTokenLimit           int      `json:"outputTokenLimit"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
	Thinking                   bool     `json:"thinking,omitempty"`
}

func (s *Server) models() []string {
	if s.Models == nil {
		return DefaultModels
	}
	return s.Models
}

func modelOf(id string) modelObject {
	thinking := strings.HasPrefix(id, "gemini-2.5") || strings.HasPrefix(id, "gemini-3")
	return modelObject{Name: geminiwire.ModelPath(id), Version: "001", DisplayName: id, InputTokenLimit: 1048576,
		OutputTokenLimit: 65536, Thinking: thinking, SupportedGenerationMethods: []string{geminiwire.MethodGenerate,
			"countTokens", "createCachedContent", geminiwire.MethodBatch}}
}

// listModels serves GET /v1beta/models: every model served, on one page.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Models []modelObject `json:"models"`
	}{}
	for _, id := range s.models() {
		out.Models = append(out.Models, modelOf(id))
	}
	writeJSON(w, http.StatusOK, out)
}

// getModel serves GET /v1beta/models/{model}.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("method")
	if !slices.Contains(s.models(), id) {
		_, version, _ := geminiwire.Unversioned(r.URL.Path)
		writeError(w, http.StatusNotFound, "models/"+id+" is not found for API version "+version+".")
		return
	}
	writeJSON(w, http.StatusOK, modelOf(id))
}

// countTokens serves :countTokens: the word count of {"contents"} or of
// {"generateContentRequest"}, as generateContent would count its prompt.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request, model string) {
	body := readBody(w, r)
	if body == nil {
		return
	}
	var req struct {
		Contents []geminiwire.Content `json:"contents"`
		Generate json.RawMessage      `json:"generateContentRequest"`
	}
	if k := unknownMember(body, []string{"contents", "generateContentRequest"}); k != "" || json.Unmarshal(body, &req) != nil {
		writeError(w, http.StatusBadRequest, `Invalid JSON payload received. Unknown name "`+k+`": Cannot find field.`)
		return
	}
	var total int64
	if len(req.Generate) > 0 {
		c, msg := check(req.Generate, model)
		if msg != "" {
			writeError(w, http.StatusBadRequest, msg)
			return
		}
		req.Contents = c.req.Contents
		if sys := c.req.SystemInstruction.Text(); sys != "" {
			total += words(sys)
		}
	}
	for _, ct := range req.Contents {
		total += words(ct.Text())
	}
	writeJSON(w, http.StatusOK, map[string]int64{"totalTokens": total})
}
