package observe

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
)

// maxLoggedBody is how much of a body LogBodies logs.
const maxLoggedBody = 64 << 10

// LogBodies wraps the proxy's handler so that each create-message call
// (POST .../v1/messages) logs one debug line to log with its request and
// response bodies (the first 64 KiB of each), as they passed through.
// Headers, and so keys, are never logged. Streams still go out as they
// are written. It is what "llmfleet serve --log-bodies" adds; without it
// no body is logged anywhere.
func LogBodies(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
			next.ServeHTTP(w, r)
			return
		}
		req := &cappedBuffer{}
		if r.Body != nil {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, req), r.Body}
		}
		rec := &bodyRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.Debug("message bodies", "path", r.URL.Path, "status", rec.status,
			"request_body", req.String(), "response_body", rec.body.String())
	})
}

// cappedBuffer keeps the first maxLoggedBody bytes written to it.
type cappedBuffer struct {
	b         []byte
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := maxLoggedBody - len(c.b)
	if len(p) > room {
		c.b, c.truncated = append(c.b, p[:max(room, 0)]...), true
	} else {
		c.b = append(c.b, p...)
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	if c.truncated {
		return string(c.b) + "…(truncated)"
	}
	return string(c.b)
}

// bodyRecorder copies what a handler writes. Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines), so
// streams still go out as they are written.
type bodyRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	body        cappedBuffer
}

func (b *bodyRecorder) WriteHeader(code int) {
	if !b.wroteHeader && code >= 200 {
		b.status, b.wroteHeader = code, true
	}
	b.ResponseWriter.WriteHeader(code)
}

func (b *bodyRecorder) Write(p []byte) (int, error) {
	b.wroteHeader = true
	b.body.Write(p)
	return b.ResponseWriter.Write(p)
}

// Flush flushes the underlying writer, for callers that assert
// http.Flusher.
func (b *bodyRecorder) Flush() { http.NewResponseController(b.ResponseWriter).Flush() }

// Unwrap returns the underlying writer.
func (b *bodyRecorder) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// Hijack refuses to hand the connection over, so that the proxy answers
// through the recorder (a batched caller then waits in its goroutine
// rather than on its connection alone) and the answer is logged.
func (b *bodyRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, http.ErrNotSupported
}
