package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// Inspect reads the model of a Messages request and its pool key: the
// anthropic-* headers (anthropic-beta, anthropic-version, ...), which a
// Message Batches create applies to every request in it. One batch may
// hold several models, so the model is not in the key; the engine may
// split pools by model as well.
func (p *Provider) Inspect(req *llmfleet.Request) (llmfleet.RequestInfo, error) {
	var m struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(req.Body, &m); err != nil || !isObject(req.Body) {
		if err == nil {
			err = errNotObject
		}
		return llmfleet.RequestInfo{}, localError(http.StatusBadRequest, "invalid_request_error", "request body is not a JSON object: "+err.Error())
	}
	info := llmfleet.RequestInfo{Model: m.Model, PoolKey: headerSignature(req.Header)}
	if prompt, err := claudewire.PromptOf(req.Body); err == nil {
		info.Prompt = prompt // (a prompt it cannot read is no cause to refuse the request here)
	}
	return info, nil
}

// UpgradeTTL returns params (a batch item's body) with every 5-minute
// cache_control raised to an hour, and how many it raised (see
// llmfleet.TTLUpgrader).
func (p *Provider) UpgradeTTL(params json.RawMessage) (json.RawMessage, int, error) {
	return claudewire.UpgradeTTL(params)
}

// headerSignature identifies the anthropic-* headers, which must be equal
// for requests to share a batch.
func headerSignature(h http.Header) string {
	var parts []string
	for k, vs := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "anthropic-") {
			vs = slices.Clone(vs)
			sort.Strings(vs)
			parts = append(parts, lk+"="+strings.Join(vs, ","))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// BatchParams returns req's body without "stream" (a batch refuses it),
// every other byte as it was.
func (p *Provider) BatchParams(req *llmfleet.Request) (json.RawMessage, error) {
	b, err := jsonmember.Delete(req.Body, "stream")
	if err != nil {
		return nil, localError(http.StatusBadRequest, "invalid_request_error", err.Error())
	}
	return b, nil
}

// errNotObject refuses a body that is valid JSON but not an object.
var errNotObject = errors.New("not an object")

// isObject reports whether body, valid JSON, is an object.
func isObject(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}
