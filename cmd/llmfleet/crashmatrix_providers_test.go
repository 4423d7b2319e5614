package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// This file is what TestCrashMatrix needs of each provider: its emulator,
// with the matrix's fault points, behind matrixAPI; the serve flag of its
// URL; its face's client and answer.

// matrixProvider is a provider whose batches TestCrashMatrix runs.
type matrixProvider struct {
	name, urlFlag, keyPrefix string
	// upstream returns the provider's emulator for the matrix's upstream.
	upstream func(u *matrixUpstream) matrixAPI
	// client returns a client of the provider's face with key.
	client func(t *testing.T, key string) matrixClient
	// answerText returns the text of an answer body, or "".
	answerText func(body string) string
}

// matrixProviders are the providers TestCrashMatrix runs.
var matrixProviders = []matrixProvider{
	{name: "anthropic", urlFlag: "--anthropic-url", keyPrefix: "sk-ant-api03", upstream: newAnthropicAPI,
		client: func(t *testing.T, key string) matrixClient { return &crashClient{t: t, key: key} }, answerText: answerText},
	{name: "gemini", urlFlag: "--gemini-url", keyPrefix: "AIza", upstream: newGeminiAPI,
		client: func(t *testing.T, key string) matrixClient { return &geminiCrashClient{t: t, key: key} }, answerText: geminiText},
}

// The endpoints the matrix's upstream counts the answers of.
const (
	endpointCreate  = "create"
	endpointResults = "results"
)

// matrixAPI is a provider's emulator as the matrix drives and reads it.
type matrixAPI interface {
	http.Handler
	// creates returns how many batch creates reached the emulator.
	creates() int
	// holdCreates holds every create, unprocessed, until the test
	// releases it (matrixUpstream.hold); it is then dropped.
	holdCreates()
	// dropCreateAnswers makes the next n creates make their batches and
	// drop their answers.
	dropCreateAnswers(n int)
	// landCreatesLate makes the next n creates drop their connections once
	// read, their batches landing d later on the emulator's clock.
	landCreatesLate(d time.Duration, n int)
	// holdResults holds every results download until the test releases
	// it; it is then dropped.
	holdResults()
	clearFaults()
	// batchesCreated returns how many batches key created (landed).
	batchesCreated(key string) int
	// batchCount returns how many batches every key created.
	batchCount() int
	// resultsServed returns how many results downloads were answered.
	resultsServed() int
	// resultsReadAgain returns how many batches' results were read more
	// than serve reads them once.
	resultsReadAgain() int
	// submissions are the requests of the batches created.
	submissions() []matrixSub
	// classify names the endpoint of r whose answers are counted
	// (endpointCreate, endpointResults, or ""), or, for a status call
	// (retrieve, list), the key that made it.
	classify(r *http.Request) (endpoint, statusKey string)
	// describe says what the emulator answered, for a failure.
	describe() string
}

// matrixSub is one request of a created batch.
type matrixSub struct{ BatchID, Text string }

// matrixClient is a client of a provider's face.
type matrixClient interface {
	// submit sends one async request per prompt and returns their ids.
	submit(base string, prompts []string) []string
	// status returns the status of a pending ticket ("" once answered).
	status(base, id string) string
	// ticket reads a ticket: its status code and body.
	ticket(base, id string) (int, []byte)
}

// anthropicAPI is the Anthropic emulator, its faults its own.
type anthropicAPI struct {
	*emulator.Server
	u *matrixUpstream
}

func newAnthropicAPI(u *matrixUpstream) matrixAPI {
	return anthropicAPI{u: u, Server: &emulator.Server{
		Clock:      matrixClock{u},
		Turnaround: func(string, *rand.Rand) time.Duration { return matrixTurnaround },
		Logger:     slog.New(slog.DiscardHandler),
	}}
}

func (a anthropicAPI) creates() int { return a.Stats().Calls[emulator.EndpointCreate] }

func (a anthropicAPI) holdCreates() {
	a.InjectFault(emulator.Fault{Method: "POST", Endpoint: emulator.EndpointCreate, Delay: time.Hour, Times: -1})
}

func (a anthropicAPI) dropCreateAnswers(n int) {
	a.InjectFault(emulator.Fault{Method: "POST", Endpoint: emulator.EndpointCreate, DropResponse: true, Times: n})
}

func (a anthropicAPI) landCreatesLate(d time.Duration, n int) {
	a.InjectFault(emulator.Fault{Method: "POST", Endpoint: emulator.EndpointCreate, LandAfter: d, Times: n})
}

func (a anthropicAPI) holdResults() {
	a.InjectFault(emulator.Fault{Method: "GET", Endpoint: emulator.EndpointResults, Delay: time.Hour, Times: -1})
}

func (a anthropicAPI) clearFaults()                  { a.ClearFaults() }
func (a anthropicAPI) batchesCreated(key string) int { return a.BatchesCreated(key) }
func (a anthropicAPI) batchCount() int               { return len(a.Stats().Batches) }
func (a anthropicAPI) resultsServed() int            { return a.u.handled(endpointResults) }
func (a anthropicAPI) describe() string              { return fmt.Sprint(a.Stats().Calls) }

func (a anthropicAPI) resultsReadAgain() int {
	again := 0
	for _, b := range a.Stats().Batches {
		if b.Results > 1 {
			again++
		}
	}
	return again
}

func (a anthropicAPI) submissions() []matrixSub {
	var out []matrixSub
	for _, s := range a.Stats().Submissions {
		out = append(out, matrixSub{s.BatchID, s.Text})
	}
	return out
}

func (a anthropicAPI) classify(r *http.Request) (string, string) {
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/messages/batches") && !strings.HasSuffix(r.URL.Path, "/results"):
		return "", r.Header.Get("X-Api-Key")
	case r.Method == http.MethodPost && strings.TrimSuffix(r.URL.Path, "/") == "/v1/messages/batches":
		return endpointCreate, ""
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/messages/batches/") && strings.HasSuffix(r.URL.Path, "/results"):
		return endpointResults, ""
	}
	return "", ""
}

// ticket reads a ticket of the Anthropic face.
func (c *crashClient) ticket(base, id string) (int, []byte) {
	code, _, b := c.do("GET", base+proxy.RequestsPath+id, "")
	return code, b
}

// answerText returns the text of a Message body, or "".
func answerText(body string) string {
	var msg struct {
		Content []struct{ Text string }
	}
	if json.Unmarshal([]byte(body), &msg) != nil || len(msg.Content) != 1 {
		return ""
	}
	return msg.Content[0].Text
}
