package proxy

import (
	"fmt"
	"testing"
)

// TestAnthropicAnswerIDs: what an Anthropic answer names is read at its
// places whatever other blocks it holds (a search result's list, a
// text), in a JSON answer and in a stream's events alike.
func TestAnthropicAnswerIDs(t *testing.T) {
	for _, c := range []struct {
		data string
		want []string
	}{
		{`{"type":"message","id":"msg_1","container":{"id":"container_1","expires_at":"x"},"content":[` +
			`{"type":"web_search_tool_result","tool_use_id":"s","content":[{"type":"web_search_result","url":"u"}]},` +
			`{"type":"tool_use","id":"t","name":"n","input":{"file_id":"file_echo"}},` +
			`{"type":"bash_code_execution_tool_result","tool_use_id":"b","content":{"type":"bash_code_execution_result","content":[{"type":"bash_code_execution_output","file_id":"file_1"}]}}]}`,
			[]string{"msg_1", "container_1", "file_1"}},
		{`{"type":"message_start","message":{"type":"message","id":"msg_2","content":[]}}`, []string{"msg_2"}},
		{`{"type":"message_delta","delta":{"container":{"id":"container_2"}}}`, []string{"container_2"}},
		{`{"type":"content_block_start","index":1,"content_block":{"type":"code_execution_tool_result","content":{"content":[{"file_id":"file_2"}]}}}`, []string{"file_2"}},
		{`{"type":"content_block_start","index":1,"content_block":{"type":"mcp_tool_listing","tools":[{"input_schema":{"file_id":"file_echo"}}]}}`, nil},
	} {
		if got := anthropicAnswerIDs([]byte(c.data)); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %q, want %q", c.data, got, c.want)
		}
	}
}
