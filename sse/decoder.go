// Package sse reads and writes server-sent events (text/event-stream), as
// the WHATWG HTML standard defines them: lines end in CRLF, LF or CR; a
// line "field: value" sets a field (one space after the colon is
// dropped); a line starting with a colon is a comment; a blank line ends
// an event. An event is delivered only if it has at least one data line,
// its data lines joined by LF. The id field sets the last event ID, which
// the events after it carry too; the retry field sets the reconnection
// time. A leading byte-order mark is skipped.
//
// Decoder is the push form, for a stream that passes by in pieces of any
// size, like a response body being copied to a client; Reader is the pull
// form, on an io.Reader. AppendEvent writes an event.
package sse

import (
	"bytes"
	"time"
)

// Event is one server-sent event.
type Event struct {
	// Name is the event's "event" field, or "" if it had none (which the
	// standard treats as "message").
	Name string
	// Data is the event's data lines, joined by LF.
	Data []byte
	// ID is the last event ID set by an "id" field, in this event or an
	// earlier one.
	ID string
}

// Decoder parses server-sent events from the bytes written to it. The zero
// Decoder is ready to use, but delivers nothing until Emit is set.
type Decoder struct {
	// Emit is called with each event, in order. The event's Data is the
	// callee's to keep.
	Emit func(Event)
	// Keep, if set, is asked at an event's first data line whether to keep
	// the event, given its name so far. The data of an event it refuses is
	// not held, and the event is not emitted.
	Keep func(name string) bool
	// MaxData, if positive, bounds an event's data; the data of a longer
	// event is not held, and the event is not emitted. MaxData bounds the
	// other fields' values too.
	MaxData int

	bom     int  // bytes of a leading byte-order mark seen so far
	started bool // the byte-order mark is settled
	afterCR bool // the last byte was a CR, so a LF next is part of the line end

	field    []byte // the field name being read, until its colon
	inValue  bool   // the colon was read: value bytes follow
	skip     bool   // the rest of the line is not kept
	value    []byte // the value of an event, id or retry field being read
	spaceCut bool   // the value's first byte was looked at for a space
	partial  bool   // the line has bytes (so the stream is inside a line)

	name    string
	data    []byte
	hasData bool
	refused bool // Keep or MaxData refused the event
	pending bool // a field line was read since the last event ended

	lastID   string
	retry    time.Duration
	hasRetry bool
}

var bom = []byte("\xEF\xBB\xBF")

// Write parses p. It never fails.
func (d *Decoder) Write(p []byte) (int, error) {
	n := len(p)
	for !d.started && len(p) > 0 {
		if p[0] == bom[d.bom] {
			p = p[1:]
			if d.bom++; d.bom == len(bom) {
				d.started = true
			}
			continue
		}
		d.started = true
		d.feed(bom[:d.bom]) // the start of a mark, then something else
	}
	d.feed(p)
	return n, nil
}

// feed parses p, which comes after any byte-order mark.
func (d *Decoder) feed(p []byte) {
	for len(p) > 0 {
		if d.afterCR {
			d.afterCR = false
			if p[0] == '\n' {
				p = p[1:]
				continue
			}
		}
		i := indexLineEnd(p)
		if i < 0 {
			d.lineBytes(p)
			return
		}
		d.lineBytes(p[:i])
		d.endLine()
		d.afterCR = p[i] == '\r'
		p = p[i+1:]
	}
}

// lineBytes parses a piece of a line, without its end.
func (d *Decoder) lineBytes(p []byte) {
	if len(p) > 0 {
		d.partial = true
	}
	for len(p) > 0 && !d.inValue && !d.skip {
		c := p[0]
		p = p[1:]
		if c == ':' {
			d.startValue()
			break
		}
		if len(d.field) == len("retry") {
			d.skip = true // longer than any field name kept
			break
		}
		d.field = append(d.field, c)
	}
	if d.skip || len(p) == 0 {
		return
	}
	if !d.spaceCut {
		d.spaceCut = true
		if p[0] == ' ' {
			p = p[1:]
		}
	}
	if string(d.field) == "data" {
		d.data = append(d.data, p...)
		d.checkSize()
		return
	}
	d.value = append(d.value, p...)
	if d.MaxData > 0 && len(d.value) > d.MaxData {
		d.skip = true
	}
}

// startValue is called at the colon after a field name.
func (d *Decoder) startValue() {
	d.inValue = true
	switch string(d.field) {
	case "":
		d.skip = true // a comment
	case "data":
		d.startData()
	case "event", "id", "retry":
	default:
		d.skip = true
	}
}

// startData begins a data line.
func (d *Decoder) startData() {
	if d.refused {
		d.skip = true
		return
	}
	if d.hasData {
		d.data = append(d.data, '\n')
		d.checkSize()
	} else if d.Keep != nil && !d.Keep(d.name) {
		d.refuse()
	} else {
		d.hasData = true
	}
}

// checkSize refuses the event if its data is over MaxData.
func (d *Decoder) checkSize() {
	if d.MaxData > 0 && len(d.data) > d.MaxData {
		d.refuse()
	}
}

// refuse drops the current event's data, and the rest of it.
func (d *Decoder) refuse() {
	d.refused, d.hasData, d.data, d.skip = true, false, nil, true
}

// endLine handles the end of a line.
func (d *Decoder) endLine() {
	switch {
	case !d.partial:
		d.dispatch()
	case !d.inValue && string(d.field) == "data": // "data" alone: an empty data line
		d.startData()
		d.pending = true
	case !d.inValue && len(d.field) > 0 && !d.skip: // a field name alone: an empty value
		d.setField("")
		d.pending = true
	case d.inValue && !d.skip && string(d.field) != "data":
		d.setField(string(d.value))
		d.pending = true
	case len(d.field) > 0 || !d.inValue: // not a comment
		d.pending = true
	}
	d.field, d.value = d.field[:0], d.value[:0]
	d.inValue, d.skip, d.spaceCut, d.partial = false, false, false, false
}

// setField sets the event, id or retry field.
func (d *Decoder) setField(v string) {
	switch string(d.field) {
	case "event":
		d.name = v
	case "id":
		if !bytes.ContainsRune([]byte(v), 0) {
			d.lastID = v
		}
	case "retry":
		if ms, ok := parseDigits(v); ok {
			d.retry, d.hasRetry = time.Duration(ms)*time.Millisecond, true
		}
	}
}

// parseDigits parses v, ASCII digits only, saturating at about 292
// years' worth of milliseconds.
func parseDigits(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	const limit = int64(1<<63-1) / int64(time.Millisecond)
	var n int64
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = min(n*10+int64(v[i]-'0'), limit)
	}
	return n, true
}

// dispatch ends the event at a blank line.
func (d *Decoder) dispatch() {
	if d.hasData && d.Emit != nil {
		if d.data == nil {
			d.data = []byte{}
		}
		d.Emit(Event{Name: d.name, Data: d.data, ID: d.lastID})
	}
	d.name, d.data, d.hasData, d.refused, d.pending = "", nil, false, false, false
}

// Pending reports whether the bytes written so far end inside an event or
// inside a line, that is, whether a stream ending here was cut short. A
// trailing comment line does not count.
func (d *Decoder) Pending() bool { return d.pending || d.partial || !d.started && d.bom > 0 }

// Retry returns the reconnection time set by the last valid "retry" field,
// if any.
func (d *Decoder) Retry() (time.Duration, bool) { return d.retry, d.hasRetry }

// indexLineEnd returns the offset of the first CR or LF in b, or -1.
func indexLineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	end := b
	if i >= 0 {
		end = b[:i]
	}
	if j := bytes.IndexByte(end, '\r'); j >= 0 {
		return j
	}
	return i
}
