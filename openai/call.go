package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// request returns a request of the batch API with cred and the
// OpenAI-Organization and OpenAI-Project headers of header.
func (p *Provider) request(ctx context.Context, cred llmfleet.Credential, header http.Header, method, path string, body io.Reader, contentType string) (*http.Request, error) {
	hr, err := http.NewRequestWithContext(ctx, method, p.base()+path, body)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"OpenAI-Organization", "OpenAI-Project"} {
		if v := header.Get(k); v != "" {
			hr.Header.Set(k, v)
		}
	}
	if contentType != "" {
		hr.Header.Set("Content-Type", contentType)
	}
	key := cred.APIKey
	if key == "" {
		key = cred.AuthToken
	}
	hr.Header.Set("Authorization", "Bearer "+key)
	return hr, nil
}

// call makes one JSON call of the batch API and decodes its answer into
// out; an error answer is an *llmfleet.Error.
func (p *Provider) call(ctx context.Context, cred llmfleet.Credential, header http.Header, method, path string, body io.Reader, contentType string, out any) error {
	_, err := p.callHeader(ctx, cred, header, method, path, body, contentType, out)
	return err
}

// callHeader is call, returning the 2xx answer's header too.
func (p *Provider) callHeader(ctx context.Context, cred llmfleet.Credential, header http.Header, method, path string, body io.Reader, contentType string, out any) (http.Header, error) {
	hr, err := p.request(ctx, cred, header, method, path, body, contentType)
	if err != nil {
		return nil, err
	}
	res, err := p.client().Do(hr)
	if err != nil {
		return nil, fmt.Errorf("openai: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("openai: %s %s: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		return nil, openaiwire.ErrorOf(res.StatusCode, b, res.Header.Get("X-Request-Id"))
	}
	if out == nil {
		return res.Header, nil
	}
	if w, ok := out.(*[]byte); ok {
		*w = b
		return res.Header, nil
	}
	return res.Header, json.Unmarshal(b, out)
}
