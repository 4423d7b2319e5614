package openaiemu

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
)

// Dimensions is the length of every emulated embedding.
const Dimensions = 8

type embeddingsRequest struct {
	Model string          `json:"model"`
	Input json.RawMessage `json:"input"`
	// EncodingFormat is "float" (the default) or "base64": the vector as
	// the base64 of its little-endian float32s, as the openai npm SDK 6.x
	// asks by default.
	EncodingFormat string `json:"encoding_format"`
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

// embedding is one vector of the answer; Embedding is a []float64 or, for
// encoding_format base64, a string.
type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// Base64Vector returns v as the API encodes it for encoding_format
// "base64": the standard base64 of its values as little-endian IEEE 754
// float32s.
func Base64Vector(v []float64) string {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(b)
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
	if f := req.EncodingFormat; f != "" && f != "float" && f != "base64" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "encoding_format",
			fmt.Sprintf("Invalid value: '%s'. Supported values are: 'float' and 'base64'.", f))
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
		var vec any = Vector(in)
		if req.EncodingFormat == "base64" {
			vec = Base64Vector(Vector(in))
		}
		out.Data = append(out.Data, embedding{Object: "embedding", Index: i, Embedding: vec})
		out.Usage.PromptTokens += words(in)
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	writeJSON(w, http.StatusOK, out)
}
