package pricing

import (
	"bytes"
	_ "embed"
)

// embeddedGemini is the Gemini provider's part of the default table, kept
// apart from prices.yaml; Default merges it after.
//
//go:embed prices_gemini.yaml
var embeddedGemini []byte

// mergeGemini adds the Gemini prices to t.
func mergeGemini(t *Table) error { return t.Merge(bytes.NewReader(embeddedGemini)) }
