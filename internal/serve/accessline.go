package serve

import (
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// appendAccessLine appends the access line of line as a slog.TextHandler
// made with no options but its level writes the record accessLog.write
// makes of it: the same bytes (TestAccessLineText compares them), without
// the handler's work per record.
func appendAccessLine(b []byte, line accessLine) []byte {
	a := line.a
	b = append(b, "time="...)
	b = appendRFC3339Millis(b, line.at.Round(0))
	b = append(b, " level="...)
	b = append(b, line.level.String()...)
	b = append(b, " msg=request method="...)
	b = appendTextString(b, a.Method)
	b = append(b, " path="...)
	b = appendTextString(b, a.Path)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(a.Status), 10)
	b = append(b, " latency="...)
	b = append(b, a.Latency.String()...)
	if a.Messages {
		b = append(b, " route="...)
		b = appendTextString(b, string(a.Route))
		b = append(b, " model="...)
		b = appendTextString(b, a.Model)
		b = append(b, " budget="...)
		b = append(b, a.Budget.String()...)
		b = append(b, " request_id="...)
		b = appendTextString(b, a.RequestID)
	}
	if a.Key != "" {
		b = append(b, " key="...)
		b = appendTextString(b, a.Key)
	}
	return append(b, '\n')
}

// appendRFC3339Millis appends t as slog's text handler writes a record's
// time: RFC 3339 with exactly three digits of milliseconds.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	// RFC3339Nano trims trailing zeros: a tenth of a millisecond more
	// keeps four digits, the fourth dropped.
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
}

// appendTextString appends s as slog's text handler writes a string
// value: quoted (strconv.Quote) when it needs to be, else as it is.
func appendTextString(b []byte, s string) []byte {
	if textNeedsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// textNeedsQuoting reports whether slog's text handler quotes s: empty;
// or with a space, '=', '"' or an ASCII control character but DEL; or
// with a rune that is invalid, a space or not printable.
func textNeedsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == ' ' || c == '=' || c == '"' {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}
