package sse

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// refResult is what reference makes of a whole stream.
type refResult struct {
	events   []Event
	pending  bool
	retry    time.Duration
	hasRetry bool
}

// reference parses a whole stream line by line, transcribing the
// standard's steps, with Decoder's Keep and MaxData: the model FuzzDecoder
// holds the Decoder to.
func reference(in []byte, keep func(string) bool, maxData int) refResult {
	var r refResult
	in = bytes.TrimPrefix(in, bom)
	var name, lastID string
	var data []byte
	var hasData, refused bool
	fits := func(v []byte) bool { return maxData <= 0 || len(v) <= maxData }
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		if i < 0 {
			r.pending = true // a cut line
			break
		}
		line := in[:i]
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
		if len(line) == 0 {
			if hasData {
				r.events = append(r.events, Event{Name: name, Data: append([]byte{}, data...), ID: lastID})
			}
			name, data, hasData, refused, r.pending = "", nil, false, false, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		r.pending = true
		field, value, found := bytes.Cut(line, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			if fits(value) {
				name = string(value)
			}
		case "data":
			switch {
			case refused:
			case !hasData && keep != nil && !keep(name):
				refused = true
			default:
				if hasData {
					data = append(data, '\n')
				}
				data, hasData = append(data, value...), true
				if !fits(data) {
					refused, hasData, data = true, false, nil
				}
			}
		case "id":
			if fits(value) && bytes.IndexByte(value, 0) < 0 {
				lastID = string(value)
			}
		case "retry":
			if ms, ok := parseDigits(string(value)); ok && fits(value) {
				r.retry, r.hasRetry = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
	return r
}

// FuzzDecoder feeds a stream to a Decoder in pieces whose sizes come from
// sizes and checks it against reference, with and without Keep and
// MaxData; and checks that a Reader agrees with the Decoder.
func FuzzDecoder(f *testing.F) {
	for _, c := range readerCases {
		f.Add([]byte(c.in), []byte{1, 2, 3}, uint8(0))
	}
	f.Add([]byte("event: ping\ndata: x\n\nevent: message_delta\ndata: 123456789\n\n"), []byte{5}, uint8(7))
	f.Add([]byte("retry: 10\r\nid: \x00\r\n"), []byte{0}, uint8(200))
	f.Fuzz(func(t *testing.T, in, sizes []byte, mode uint8) {
		var keep func(string) bool
		if mode&1 == 1 {
			keep = func(name string) bool { return len(name)%2 == 0 }
		}
		maxData := int(mode >> 1) // 0: no bound
		want := reference(in, keep, maxData)

		var got []Event
		d := Decoder{Emit: func(e Event) { got = append(got, e) }, Keep: keep, MaxData: maxData}
		rest := in
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(sizes) > 0 {
				n = min(n, int(sizes[i%len(sizes)])+1)
			}
			d.Write(rest[:n])
			rest = rest[n:]
		}
		retry, hasRetry := d.Retry()
		if !reflect.DeepEqual(got, want.events) || d.Pending() != want.pending ||
			retry != want.retry || hasRetry != want.hasRetry {
			t.Fatalf("%q in pieces of %v, mode %d: got %q pending %v retry %v %v; want %q pending %v retry %v %v",
				in, sizes, mode, got, d.Pending(), retry, hasRetry, want.events, want.pending, want.retry, want.hasRetry)
		}

		if keep != nil || maxData > 0 {
			return
		}
		rd := NewReader(bytes.NewReader(in))
		for i := 0; ; i++ {
			ev, err := rd.Next()
			if err != nil {
				wantErr := io.EOF
				if want.pending {
					wantErr = io.ErrUnexpectedEOF
				}
				if i != len(want.events) || err != wantErr {
					t.Fatalf("%q: Reader ended after %d events with %v, want %d, %v", in, i, err, len(want.events), wantErr)
				}
				break
			}
			if i >= len(want.events) || !reflect.DeepEqual(ev, want.events[i]) {
				t.Fatalf("%q: Reader event %d is %q", in, i, ev)
			}
		}
	})
}

// FuzzAppendEvent checks that what AppendEvent writes reads back as the
// event given, line ends turned into LF.
func FuzzAppendEvent(f *testing.F) {
	f.Add("message_start", []byte(`{"type":"message_start"}`), 3)
	f.Add("", []byte("a\r\nb\rc\n"), 2)
	f.Add(" spaced: name", []byte(" data"), 0)
	f.Fuzz(func(t *testing.T, name string, data []byte, cut int) {
		if strings.ContainsAny(name, "\r\n") {
			return
		}
		cut = max(0, min(len(data), cut))
		// The blank line first keeps a byte-order mark in data or name off
		// the start of the stream, where it would be skipped.
		out := AppendEvent([]byte("\n"), name, data[:cut], data[cut:])
		rd := NewReader(bytes.NewReader(out))
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("AppendEvent(%q, %q) = %q: %v", name, data, out, err)
		}
		wantData := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(data))
		if ev.Name != name || string(ev.Data) != wantData {
			t.Fatalf("AppendEvent(%q, %q) = %q reads as %q %q", name, data, out, ev.Name, ev.Data)
		}
		if _, err := rd.Next(); err != io.EOF {
			t.Fatalf("AppendEvent(%q, %q) = %q: more than one event (%v)", name, data, out, err)
		}
	})
}
