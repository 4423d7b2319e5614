package llmfleet

import "github.com/llmfleet/llmfleet/jsonmember"

// WithoutField returns body, a JSON object, with its top-level member name
// removed, every other byte kept; see jsonmember.Delete.
//
// Deprecated: use jsonmember.Delete.
func WithoutField(body []byte, name string) ([]byte, error) { return jsonmember.Delete(body, name) }
