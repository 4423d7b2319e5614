package llmfleet

import "testing"

// TestWithoutField checks only the delegation; jsonmember has the cases.
func TestWithoutField(t *testing.T) {
	got, err := WithoutField([]byte(`{"model":"m","stream":true}`), "stream")
	if err != nil || string(got) != `{"model":"m"}` {
		t.Errorf("WithoutField = %s, %v", got, err)
	}
	if _, err := WithoutField([]byte(`[1]`), "stream"); err == nil {
		t.Error("WithoutField([1]): no error")
	}
}
