package observe

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// ErrorCounter is an http.RoundTripper that counts the failed calls it
// makes to the provider: an error answer by its error type (or
// "http_<status>" when the body names none), a call that got no answer as
// "network" (unless its caller had given up). Give it to the HTTP client of
// the dispatcher's provider, so that its batch API calls (and their
// retries) count in llmfleet_upstream_errors_total; the proxy's sync route
// counts its own. An error answer's body is passed on unchanged.
type ErrorCounter struct {
	// Base makes the calls; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Count is called with the kind of each failed call.
	Count func(kind string)
}

// maxErrorBody is how much of an error answer is read to find its type.
const maxErrorBody = 64 << 10

// RoundTrip makes the call with Base and counts it if it failed.
func (c *ErrorCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	base := c.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil {
			c.Count("network")
		}
		return resp, err
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	kind := "http_" + strconv.Itoa(resp.StatusCode)
	if json.Unmarshal(head, &env) == nil && env.Error.Type != "" {
		kind = env.Error.Type
	}
	c.Count(kind)
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return resp, nil
}
