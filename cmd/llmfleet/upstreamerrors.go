package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// errorCounter is an http.RoundTripper that counts the failed calls it
// makes to the provider: an error answer by its error type (or
// "http_<status>" when the body names none), a call that got no answer as
// "network". The dispatcher's provider client goes through it, so that its
// batch API calls (and their retries) count in
// llmfleet_upstream_errors_total; the proxy's sync route counts its own.
type errorCounter struct {
	base  http.RoundTripper
	count func(kind string)
}

// maxErrorBody is how much of an error answer is read to find its type.
const maxErrorBody = 64 << 10

func (c *errorCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil {
			c.count("network")
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
	c.count(kind)
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return resp, nil
}
