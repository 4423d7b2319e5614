package vault

import (
	"testing"

	"github.com/llmfleet/llmfleet"
)

// FuzzDecode decodes arbitrary plaintexts: decode must never panic, and a
// credential it reads must come back from encode and decode unchanged.
func FuzzDecode(f *testing.F) {
	f.Add(encode(llmfleet.Credential{APIKey: "sk-ant-api03-x"}))
	f.Add(encode(llmfleet.Credential{APIKey: "both", AuthToken: "set"}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{3, 'a', 'b'})
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decode(b)
		if err != nil {
			return
		}
		again, err := decode(encode(c))
		if err != nil || again != c {
			t.Fatalf("decode(%x) = %v; encoded and decoded again: %v, %v", b, c, again, err)
		}
	})
}
