package proxy

import (
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/geminiwire"
)

// This file answers the calls of an SDK given a wrong base URL: the
// OpenAI SDK pointed at the root or at /v1 (its calls land at
// /chat/completions or /v1/chat/completions, which are not the OpenAI
// face's), the Anthropic SDK pointed at /v1 or at the OpenAI face
// (/v1/v1/messages, /openai/v1/messages), the Google SDK pointed at the
// root (/v1beta/...). Each gets a 404 in its own API's envelope that
// names the base URL to set, rather than a bare 404 or the upstream's.

// openAIOnly are first segments of OpenAI API paths that the Anthropic
// API has none of under /v1/ (files and models it has).
func openAIOnly() []string {
	return []string{"chat", "responses", "embeddings", "batches", "completions", "moderations", "images", "audio",
		"uploads", "vector_stores", "assistants", "threads", "fine_tuning", "conversations", "realtime"}
}

// misdirectedAPI is the API a misdirected call was meant for.
type misdirectedAPI int

const (
	meantOpenAI misdirectedAPI = iota
	meantAnthropic
	meantGemini
)

// handleMisdirected registers on mux the paths of calls made under a
// wrong base URL. More specific than the faces' own patterns, they take
// precedence over them only for those paths.
func handleMisdirected(mux *http.ServeMux) {
	to := func(api misdirectedAPI) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { refuseMisdirected(w, r, api) }
	}
	for _, seg := range append(openAIOnly(), "files", "models") {
		// The OpenAI SDK's base URL at the root, or at /openai.
		for _, at := range []string{"", OpenAIPrefix} {
			mux.HandleFunc(at+"/"+seg, to(meantOpenAI))
			mux.HandleFunc(at+"/"+seg+"/", to(meantOpenAI))
		}
	}
	for _, seg := range openAIOnly() {
		// At /v1: the Anthropic face's prefix.
		mux.HandleFunc("/v1/"+seg, to(meantOpenAI))
		mux.HandleFunc("/v1/"+seg+"/", to(meantOpenAI))
	}
	// At /openai/v1/v1 or /v1/v1 (a /v1 too many), at /openai/v1 for the
	// Anthropic SDK, at the root for the Google one.
	mux.HandleFunc(OpenAIPrefix+"/v1/v1/", byFirstSegment(meantOpenAI))
	mux.HandleFunc("/v1/v1/", byFirstSegment(meantAnthropic))
	mux.HandleFunc(OpenAIPrefix+"/v1/messages", to(meantAnthropic))
	mux.HandleFunc(OpenAIPrefix+"/v1/messages/", to(meantAnthropic))
	mux.HandleFunc("/messages", to(meantAnthropic))
	mux.HandleFunc("/messages/", to(meantAnthropic))
	mux.HandleFunc("/v1beta/", to(meantGemini))
}

// byFirstSegment answers a call under a /v1 too many as one meant for
// the API its path names (an OpenAI-only API, or messages), else for def.
func byFirstSegment(def misdirectedAPI) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, rest, _ := strings.Cut(r.URL.Path, "/v1/v1/")
		seg, _, _ := strings.Cut(rest, "/")
		api := def
		if seg == "messages" {
			api = meantAnthropic
		}
		for _, s := range openAIOnly() {
			if seg == s {
				api = meantOpenAI
			}
		}
		refuseMisdirected(w, r, api)
	}
}

// refuseMisdirected answers a call meant for api, made under a wrong base
// URL, 404 in api's envelope naming the base URL to set.
func refuseMisdirected(w http.ResponseWriter, r *http.Request, api misdirectedAPI) {
	base := baseURLOf(r)
	call := r.Method + " " + r.URL.Path
	switch api {
	case meantOpenAI:
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "",
			"Unknown request URL: "+call+". llmfleet serves OpenAI's API under "+OpenAIPrefix+"/v1: "+
				"set the OpenAI SDK's base URL (OPENAI_BASE_URL) to "+base+OpenAIPrefix+"/v1.")
	case meantAnthropic:
		id := llmfleet.NewID("req_")
		writeErrorBody(w, failure{status: http.StatusNotFound, requestID: id, body: claudewire.Envelope("not_found_error",
			"Not found: "+call+". llmfleet serves Anthropic's API at /v1/messages: set the Anthropic SDK's base URL "+
				"(ANTHROPIC_BASE_URL) to "+base+", to which the SDK adds /v1/messages.", id)})
	case meantGemini:
		writeGeminiBody(w, http.StatusNotFound, geminiwire.Envelope(http.StatusNotFound,
			"Unknown request URL: "+call+". llmfleet serves Gemini's API under "+GeminiPrefix+"/v1beta: "+
				"set the Google Gen AI SDK's base URL (HttpOptions.BaseURL) to "+base+GeminiPrefix+"."))
	}
}

// baseURLOf returns the root of the proxy as r's client reached it: its
// scheme and host, and the /budget/<ms> prefix the call came under, if
// any.
func baseURLOf(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := scheme + "://" + r.Host
	if b, ok := llmfleet.BudgetFrom(r.Context()); ok {
		base += "/budget/" + itoa(b.Milliseconds())
	}
	return base
}
