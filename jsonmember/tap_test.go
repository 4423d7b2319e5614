package jsonmember

import (
	"bytes"
	"encoding/json"
	"testing"
)

// tapped writes b to a Tap of keys in pieces whose sizes come from sizes,
// in turn (each size plus one; none: one piece).
func tapped(keys []string, b, sizes []byte) *Tap {
	t := &Tap{Keys: keys}
	for i := 0; len(b) > 0; i++ {
		n := len(b)
		if len(sizes) > 0 {
			n = min(n, int(sizes[i%len(sizes)])+1)
		}
		t.Write(b[:n])
		b = b[n:]
	}
	return t
}

func TestTap(t *testing.T) {
	obj := []byte(`{"id":"x","content":[{"text":"\"usage\": {\"a\":1}","usage":{"deep":true}}],
		"mod\u0065l" : "m1", "usage": {"input_tokens": 12,
		"nested": [1, {"x": "]"}]} , "model":"m2"}`)
	for _, sizes := range [][]byte{nil, {0}, {2, 7}, {40}} {
		tp := tapped([]string{"model", "usage", "error"}, obj, sizes)
		if string(tp.Value(0)) != `"m2"` || string(tp.Value(1)) != `{"input_tokens": 12,
		"nested": [1, {"x": "]"}]}` || tp.Value(2) != nil {
			t.Errorf("pieces %v: %q %q %q", sizes, tp.Value(0), tp.Value(1), tp.Value(2))
		}
	}
}

// FuzzTap checks that a Tap reads the same whatever the pieces the object
// comes in, and, for a valid JSON object, the values Members finds (the
// last member of each name).
func FuzzTap(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[2,{"c":"}"}],"d\"e":"3","a" : "x\\"}`), []byte{3}, "a", "b")
	f.Add([]byte(`{"\u0061": {"a":1}, "b":null}`), []byte{0}, "a", "c")
	f.Add([]byte(`[{"a":1}]`), []byte{}, "a", "b")
	f.Fuzz(func(t *testing.T, obj, sizes []byte, k1, k2 string) {
		keys := []string{k1, k2}
		whole, cut := tapped(keys, obj, nil), tapped(keys, obj, sizes)
		for i := range keys {
			if !bytes.Equal(whole.Value(i), cut.Value(i)) {
				t.Fatalf("%q key %q: whole %q, in pieces of %v %q", obj, keys[i], whole.Value(i), sizes, cut.Value(i))
			}
		}
		if !json.Valid(obj) || k1 == k2 {
			return // a name asked twice is kept at its first index only
		}
		ms, err := Members(obj)
		if err != nil {
			return
		}
		for i, k := range keys {
			m, ok := Find(ms, k)
			var want []byte
			if ok {
				want = m.Value(obj)
			}
			if !bytes.Equal(whole.Value(i), want) {
				t.Fatalf("%q key %q: tap %q, Members %q", obj, k, whole.Value(i), want)
			}
		}
	})
}

// TestIndexStop: indexStop finds what bytes.IndexAny finds with the same
// bytes, at every position of every byte value.
func TestIndexStop(t *testing.T) {
	sets := []struct {
		chars  string
		lo, hi uint64
	}{
		{`"\`, strStopsLo, strStopsHi},
		{`"{}[]`, skipStopsLo, skipStopsHi},
		{`"{}[],:`, runStopsLo, runStopsHi},
	}
	for _, s := range sets {
		for c := 0; c < 256; c++ {
			mid := []byte("abc\xff\x80 ?xyz")
			mid[6] = byte(c)
			for _, p := range [][]byte{{byte(c)}, mid, []byte("plain text, no stops?")} {
				if got, want := indexStop(p, s.lo, s.hi), bytes.IndexAny(p, s.chars); got != want {
					t.Fatalf("indexStop(%q) in %q = %d, bytes.IndexAny %d", p, s.chars, got, want)
				}
			}
		}
	}
}
