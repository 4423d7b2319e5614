package sse

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// readAll reads every event of s with a Reader, in pieces of one byte too,
// and checks that both ways agree.
func readAll(t *testing.T, s string) ([]Event, error) {
	t.Helper()
	read := func(r io.Reader) ([]Event, error) {
		rd := NewReader(r)
		var evs []Event
		for {
			ev, err := rd.Next()
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				return evs, err
			}
			evs = append(evs, ev)
		}
	}
	evs, err := read(strings.NewReader(s))
	evs1, err1 := read(iotest.OneByteReader(strings.NewReader(s)))
	if !reflect.DeepEqual(evs, evs1) || err != err1 {
		t.Fatalf("%q: whole %q %v, bytewise %q %v", s, evs, err, evs1, err1)
	}
	return evs, err
}

func ev(name, data, id string) Event { return Event{Name: name, Data: []byte(data), ID: id} }

// readerCases are the Reader's table and seeds of FuzzDecoder.
var readerCases = []struct {
	in   string
	want []Event
	err  error
}{
	{"", nil, nil},
	{"event: message_start\ndata: {\"a\":1}\n\n", []Event{ev("message_start", `{"a":1}`, "")}, nil},
	{"data: YHOO\ndata: +2\ndata: 10\n\n", []Event{ev("", "YHOO\n+2\n10", "")}, nil},
	{": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
		[]Event{ev("", "first event", "1"), ev("", "second event", ""), ev("", " third event", "")}, nil},
	{"data\n\ndata\ndata\n\ndata:\n", []Event{ev("", "", ""), ev("", "\n", "")}, io.ErrUnexpectedEOF},
	{"data:test\n\ndata: test\n\n", []Event{ev("", "test", ""), ev("", "test", "")}, nil},
	{"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\revent: c\ndata: 3\n\n",
		[]Event{ev("a", "1", ""), ev("b", "2", ""), ev("c", "3", "")}, nil},
	{"\xEF\xBB\xBFdata: bom\n\n", []Event{ev("", "bom", "")}, nil},
	{"\xEF\xBBdata: no\n\n", nil, nil}, // the field is "\xEF\xBBdata"
	{"event: lonely\n\nevent: x\nid: 7\nfoo: bar\ndata: y\n\n", []Event{ev("x", "y", "7")}, nil},
	{"id: 1\ndata: a\n\ndata: b\n\nid: a\x00b\ndata: c\n\n", []Event{ev("", "a", "1"), ev("", "b", "1"), ev("", "c", "1")}, nil},
	{"event: message_start\ndata: {\"type\":\"mess", nil, io.ErrUnexpectedEOF},
	{"data: a\n\nevent: b\n", []Event{ev("", "a", "")}, io.ErrUnexpectedEOF},
	{"data: a\n", nil, io.ErrUnexpectedEOF},
	{"data: a\n\n: keep-alive\n", []Event{ev("", "a", "")}, nil},
	{"data: a\n\n:", []Event{ev("", "a", "")}, io.ErrUnexpectedEOF},
	{"event: ping\ndata: {\"type\": \"ping\"}\n\n", []Event{ev("ping", `{"type": "ping"}`, "")}, nil},
	{"data: a\nevent: late\n\n", []Event{ev("late", "a", "")}, nil},
	{"eventually: x\ndata: y\n\n", []Event{ev("", "y", "")}, nil},
}

func TestReader(t *testing.T) {
	for _, c := range readerCases {
		got, err := readAll(t, c.in)
		if !reflect.DeepEqual(got, c.want) || err != c.err {
			t.Errorf("%q: got %q, %v; want %q, %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	rd := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
	if ev, err := rd.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first: %v %v", ev, err)
	}
	if _, err := rd.Next(); err != boom {
		t.Fatalf("second: %v, want boom", err)
	}
	if _, err := rd.Next(); err != boom {
		t.Fatalf("again: %v, want boom", err)
	}
}

func TestRetry(t *testing.T) {
	rd := NewReader(strings.NewReader("retry: 1500\n\nretry: 2x\n\nretry\n\ndata: a\n\n"))
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	if d, ok := rd.Retry(); !ok || d != 1500*time.Millisecond {
		t.Errorf("Retry = %v %v", d, ok)
	}
	var d Decoder
	d.Write([]byte("retry: 99999999999999999999999999\n"))
	if r, ok := d.Retry(); !ok || r <= 0 {
		t.Errorf("huge retry = %v %v", r, ok)
	}
}

func TestDecoderKeepAndMaxData(t *testing.T) {
	var got []Event
	var asked []string
	d := Decoder{
		Emit:    func(e Event) { got = append(got, e) },
		Keep:    func(name string) bool { asked = append(asked, name); return name != "content_block_delta" },
		MaxData: 20,
	}
	in := "event: content_block_delta\ndata: 1\ndata: 2\n\n" +
		"event: message_delta\ndata: 12345678901234567890\n\n" +
		"event: message_delta\ndata: 1234567890\ndata: 1234567890\n\n" +
		"event: a_name_longer_than_twenty\ndata: x\n\n" +
		"data: y\n\n"
	for i := range len(in) {
		d.Write([]byte(in[i : i+1]))
	}
	want := []Event{ev("message_delta", "12345678901234567890", ""), ev("", "x", ""), ev("", "y", "")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if w := []string{"content_block_delta", "message_delta", "message_delta", "", ""}; !reflect.DeepEqual(asked, w) {
		t.Errorf("Keep asked for %q, want %q", asked, w)
	}
	if d.Pending() {
		t.Error("Pending after a complete stream")
	}
}

func TestAppendEvent(t *testing.T) {
	cases := []struct {
		name string
		data []string
		want string
	}{
		{"ping", []string{`{"type": "ping"}`}, "event: ping\ndata: {\"type\": \"ping\"}\n\n"},
		{"m", []string{`{"a":`, `1}`}, "event: m\ndata: {\"a\":1}\n\n"},
		{"", []string{"a\nb\r\nc\rd"}, "data: a\ndata: b\ndata: c\ndata: d\n\n"},
		{"", []string{"a\r", "\nb"}, "data: a\ndata: b\n\n"},
		{"e", nil, "event: e\ndata: \n\n"},
	}
	for _, c := range cases {
		var data [][]byte
		for _, d := range c.data {
			data = append(data, []byte(d))
		}
		if got := string(AppendEvent(nil, c.name, data...)); got != c.want {
			t.Errorf("AppendEvent(%q, %q) = %q, want %q", c.name, c.data, got, c.want)
		}
	}
}

// TestAppendEventCRLF: the same events, lines ended by CRLF, which a
// Reader reads back as AppendEvent's.
func TestAppendEventCRLF(t *testing.T) {
	got := AppendEventCRLF(nil, "m", []byte("a\nb"), []byte(`{"c":1}`))
	if want := "event: m\r\ndata: a\r\ndata: b{\"c\":1}\r\n\r\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	ev, err := NewReader(bytes.NewReader(got)).Next()
	if err != nil || ev.Name != "m" || string(ev.Data) != "a\nb{\"c\":1}" {
		t.Fatalf("read back %+v, %v", ev, err)
	}
}

func TestAppendComment(t *testing.T) {
	for text, want := range map[string]string{
		"ping":         ": ping\n\n",
		"":             ": \n\n",
		"a\nb\r\nc\rd": ": a\n: b\n: c\n: d\n\n",
	} {
		got := AppendComment(nil, text)
		if string(got) != want {
			t.Errorf("AppendComment(%q) = %q, want %q", text, got, want)
		}
		r := NewReader(strings.NewReader(string(got) + "data: x\n\n"))
		if e, err := r.Next(); err != nil || string(e.Data) != "x" {
			t.Errorf("after AppendComment(%q): %+v %v, want the next event", text, e, err)
		}
	}
}
