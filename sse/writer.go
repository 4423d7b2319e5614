package sse

// AppendEvent appends to buf one event named name (no event field if name
// is "") whose data is the concatenation of the pieces of data, and
// returns the extended buffer. Each line of the data (lines end in CRLF,
// LF or CR) goes in a data field of its own, so that a reader gets the
// data back with its line ends turned into LF. name must not contain a
// line end.
func AppendEvent(buf []byte, name string, data ...[]byte) []byte {
	return appendEvent(buf, "\n", name, data)
}

// AppendEventCRLF is AppendEvent with every line ended by CRLF rather than
// LF, as some servers send their events (Gemini's API among them).
func AppendEventCRLF(buf []byte, name string, data ...[]byte) []byte {
	return appendEvent(buf, "\r\n", name, data)
}

// appendEvent appends an event whose lines end in eol.
func appendEvent(buf []byte, eol, name string, data [][]byte) []byte {
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, eol...)
	}
	buf = append(buf, "data: "...)
	afterCR := false
	for _, d := range data {
		for len(d) > 0 {
			if afterCR {
				afterCR = false
				if d[0] == '\n' {
					d = d[1:]
					continue
				}
			}
			i := indexLineEnd(d)
			if i < 0 {
				buf = append(buf, d...)
				break
			}
			buf = append(buf, d[:i]...)
			buf = append(buf, eol...)
			buf = append(buf, "data: "...)
			afterCR = d[i] == '\r'
			d = d[i+1:]
		}
	}
	buf = append(buf, eol...)
	return append(buf, eol...)
}

// AppendComment appends to buf a comment (a line a reader ignores, often
// sent to keep a stream alive) of text, ended by an empty line, and
// returns the extended buffer. Each line of text is a comment line of its
// own.
func AppendComment(buf []byte, text string) []byte {
	for {
		buf = append(buf, ": "...)
		i := indexLineEnd([]byte(text))
		if i < 0 {
			buf = append(buf, text...)
			break
		}
		buf = append(buf, text[:i]...)
		buf = append(buf, '\n')
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	return append(buf, "\n\n"...)
}
