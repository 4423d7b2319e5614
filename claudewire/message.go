package claudewire

import (
	"encoding/json"

	"github.com/llmfleet/llmfleet"
)

// MessageInfo holds the few fields of a Message that llmfleet reads.
type MessageInfo struct {
	// ID is the Message's id.
	ID string `json:"id"`
	// Model is the model that answered.
	Model string `json:"model"`
	// StopReason is why the model stopped.
	StopReason string `json:"stop_reason"`
	// Usage is the Message's token usage.
	Usage llmfleet.Usage `json:"usage"`
}

// ParseMessageInfo decodes the fields llmfleet reads from a Message body.
func ParseMessageInfo(body []byte) (MessageInfo, error) {
	var m MessageInfo
	err := json.Unmarshal(body, &m)
	return m, err
}
