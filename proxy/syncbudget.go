package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/internal/httpretry"
)

// This file holds the latency budget of the sync route. A sync call with
// a budget is timed from its arrival at the proxy (call.arrived). The
// budget routes and does not cut: a call whose upstream has not answered
// when it runs out goes on and is answered late, unless the caller asked
// for a hard deadline (HeaderDeadline), when the upstream call is then
// canceled and the caller gets 504 timeout_error. The upstream timeout
// (Server.UpstreamTimeout) cuts any call whose response headers have not
// come by then (deadline.go). Once they have come, the answer is under
// way and nothing cuts it, however long its body or stream takes. Before
// that, an upstream 429, 529 or overloaded_error whose retry-after leaves
// retryMargin of the budget is waited out and the call sent again, at
// most maxSyncRetries times: waits llmfleet adds, which the budget bounds;
// the body of such a call was read whole (serveSync), so it can be.
//
// The work is done in the reverse proxy's transport (the forwarder), so
// that the reverse proxy sees one round trip: the answer that was passed
// on, or the error of a call that was cut.

const (
	// maxSyncRetries is how many times a sync call with a budget is sent
	// again after a 429, 529 or overloaded_error.
	maxSyncRetries = 3
	// retryMargin is how much of the budget must be left after a retry's
	// wait for the retry to be made: the retried call needs some time to
	// answer, and the error passed back at once is more use to the caller
	// than a late answer.
	retryMargin = 500 * time.Millisecond
	// errorPeek is the most of an upstream error body read to learn its
	// error type.
	errorPeek = 16 << 10
)

// sendBounded sends req, a sync call under its bound, and returns the
// answer to pass on: the first that is not to be retried (only a call
// with a budget is), if it came before the call was cut. The call's
// context ends when it is cut.
func (f *forwarder) sendBounded(req *http.Request, sc *syncCall) (*http.Response, error) {
	for try := 0; ; try++ {
		sc.wrote.Store(false)
		resp, err := f.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		if try < maxSyncRetries && sc.budget > 0 {
			if wait, ok := f.retryWait(resp, sc); ok {
				kind := discardError(resp)
				f.obs.failed(kind)
				f.log.Debug("sync call retried within its budget", "status", resp.StatusCode, "error", kind, "wait", wait, "retry", try+1)
				sc.waiting.Store(true)
				if err := llmfleet.Sleep(req.Context(), f.clock, wait); err != nil {
					return nil, err // cut while waiting: waiting stays set
				}
				sc.waiting.Store(false)
				req = sc.resend(req)
				continue
			}
		}
		if !sc.bound.answered() {
			resp.Body.Close()
			return nil, errCut
		}
		return resp, nil
	}
}

// retryWait reports whether resp, an upstream answer to a sync call with a
// budget, is to be waited out and the call sent again, and the wait: a
// 429, a 529 or another error of type overloaded_error, which the upstream
// did not mark x-should-retry: false, whose retry-after (retry-after-ms,
// or retry-after in seconds or as an HTTP date) leaves at least
// retryMargin of the budget. An answer without retry-after is passed on.
func (f *forwarder) retryWait(resp *http.Response, sc *syncCall) (time.Duration, bool) {
	if resp.StatusCode < 400 || strings.EqualFold(resp.Header.Get("X-Should-Retry"), "false") {
		return 0, false
	}
	now := f.clock.Now()
	wait, ok := httpretry.RetryAfter(resp.Header, now)
	if !ok || wait > sc.deadline.Sub(now)-retryMargin {
		return 0, false
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, 529:
		return wait, true
	}
	return wait, peekErrorType(resp) == "overloaded_error"
}

// resend returns req, whose answer has been discarded, ready to be sent
// again with the call's body.
func (sc *syncCall) resend(req *http.Request) *http.Request {
	r := req.Clone(req.Context())
	r.Body, r.ContentLength = nil, 0
	if len(sc.body) > 0 {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(sc.body)), int64(len(sc.body))
	}
	return r
}

// peekErrorType returns the error type of resp's error envelope, reading
// at most errorPeek bytes of its body and leaving the body as it was. The
// type of a compressed body (a caller's Accept-Encoding passed on, when
// the call is not observed) is not known: such an answer is passed on.
func peekErrorType(resp *http.Response) string {
	b, err := io.ReadAll(io.LimitReader(resp.Body, errorPeek))
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	if err != nil {
		return ""
	}
	return errorType(b)
}

// discardError reads what it needs of resp, an error answer not passed on,
// closes it and returns its kind: its error type, else "http_<status>".
func discardError(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorPeek))
	resp.Body.Close()
	if t := errorType(b); t != "" {
		return t
	}
	return "http_" + strconv.Itoa(resp.StatusCode)
}

// errorType returns the error.type of an error envelope, or "".
func errorType(body []byte) string {
	var env struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	return env.Error.Type
}

type readCloser struct {
	io.Reader
	io.Closer
}

// callCut answers a sync call cut by state (callCutHard: its hard
// deadline, callCutTimeout: the upstream timeout) with 504 timeout_error
// and reports it; sent says whether it went upstream, where it may be
// billed (its entry's usage is then estimated).
func (f *forwarder) callCut(w http.ResponseWriter, r *http.Request, sc *syncCall, state int32, sent bool) {
	if state == callCutTimeout {
		f.log.Warn("the upstream did not answer within the upstream timeout", "path", r.URL.Path, "timeout", f.timeout)
	} else {
		f.log.Info("latency budget ran out before the upstream answered: cut (hard deadline)", "path", r.URL.Path, "budget", sc.budget)
	}
	if sent {
		f.obs.cut(sc, "", llmfleet.Usage{}, "timeout_error")
	} else {
		f.obs.done(sc, "", llmfleet.Usage{}, "timeout_error")
	}
	f.s.writeCut(w, state, sc.budget)
}
