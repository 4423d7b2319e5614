package openaiemu

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"net/http"
)

// Dimensions is the length of every emulated embedding.
const Dimensions = 8

type embeddingsRequest struct {
	Model string          `json:"model"`
	Input json.RawMessage `json:"input"`
}

type embeddingList struct {
	Object string      `json:"object"`
	Data   []embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

type embedding struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float64 `json:"embedding"`
}

// Vector returns the deterministic embedding of text: Dimensions values in
// [-1, 1) derived from its SHA-256.
func Vector(text string) []float64 {
	h := sha256.Sum256([]byte(text))
	v := make([]float64, Dimensions)
	for i := range v {
		n := binary.BigEndian.Uint32(h[i*4:])
		v[i] = float64(n)/float64(1<<31) - 1
	}
	return v
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingsRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "missing_required_parameter", "model", "you must provide a model parameter")
		return
	}
	var inputs []string
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(req.Input, &inputs); err != nil || len(inputs) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_type", "input", "'input' must be a string or a non-empty array of strings.")
		return
	}
	out := embeddingList{Object: "list", Model: req.Model, Data: []embedding{}}
	for i, in := range inputs {
		s.billed(in)
		out.Data = append(out.Data, embedding{Object: "embedding", Index: i, Embedding: Vector(in)})
		out.Usage.PromptTokens += words(in)
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	writeJSON(w, http.StatusOK, out)
}
