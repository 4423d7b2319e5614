package openaiemu

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// MaxBodyBytes is the largest request body the emulator reads.
const MaxBodyBytes = 32 << 20

// DefaultFlexModels are the models that accept service_tier "flex" when
// Server.FlexModels is nil.
var DefaultFlexModels = []string{"o3", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano"}

// Server emulates the OpenAI chat completions, responses and embeddings
// endpoints. The zero value is ready to use; set the fields before the
// first request and do not change them afterwards. A Server is safe for
// concurrent use.
type Server struct {
	// Clock tells the time. Nil means the real clock.
	Clock llmfleet.Clock

	// Keys, if not empty, is the set of accepted API keys. Empty means any
	// non-empty Bearer key is accepted.
	Keys []string

	// FlexModels lists the models that accept service_tier "flex". Nil
	// means DefaultFlexModels.
	FlexModels []string

	// FlexUnavailable, if not nil, is asked for every flex request; true
	// refuses it with 429 resource_unavailable (not counted as billed).
	FlexUnavailable func(model string) bool

	// Fault, if not nil, is asked for every request after authentication;
	// a non-zero status is answered instead with that status and an error
	// of type errType, and DropConnection closes the connection, once the
	// request is read, without an answer. It is asked for each line of a
	// batch too, with the line's url: a fault there lands in the batch's
	// error file (DropConnection as a 500 server_error). Fault may block,
	// to delay the request.
	Fault func(path string) (status int, errType string)

	// FaultRetryAfter, if positive, is the wait a fault answered 429 or
	// 503 asks for, in its retry-after-ms and retry-after (whole seconds,
	// rounded up) headers.
	FaultRetryAfter time.Duration

	// BatchTurnaround is how long a batch takes from its create to its
	// end; 0 means DefaultBatchTurnaround. One of 24 hours or more makes
	// it expire.
	BatchTurnaround time.Duration

	// EnqueuedTokenLimit, if set, returns a model's limit of input tokens
	// enqueued in batches in progress (0: none); a batch that would go
	// over it fails after its create with token_limit_exceeded, as the
	// API's do.
	EnqueuedTokenLimit func(model string) int

	mu      sync.Mutex
	stats   Stats
	files   map[string]*file
	batches map[string]*batch
	// background keeps each background response (by id) as it will
	// have ended, for its owner (owner) to read.
	background map[string]backgroundResponse
	seq        int
	once       sync.Once
	mux        *http.ServeMux
	served     atomic.Int64 // numbers the requests, for their x-request-id
}

// Stats counts what the Server answered.
type Stats struct {
	// Requests counts requests per path, including refused ones.
	Requests map[string]int
	// Billed counts successful (billed) replies per prompt text (the last
	// user text, or the embedding input).
	Billed map[string]int
	// FlexRefused counts flex requests refused with 429.
	FlexRefused int
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Stats{Requests: map[string]int{}, Billed: map[string]int{}, FlexRefused: s.stats.FlexRefused}
	for k, v := range s.stats.Requests {
		out.Requests[k] = v
	}
	for k, v := range s.stats.Billed {
		out.Billed[k] = v
	}
	return out
}

func (s *Server) count(f func(st *Stats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stats.Requests == nil {
		s.stats.Requests = map[string]int{}
		s.stats.Billed = map[string]int{}
	}
	f(&s.stats)
}

func (s *Server) now() time.Time {
	return llmfleet.Now(s.Clock)
}

func (s *Server) flexModel(model string) bool {
	list := s.FlexModels
	if list == nil {
		list = DefaultFlexModels
	}
	return slices.Contains(list, model)
}

// ServeHTTP routes a request to its endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.count(func(st *Stats) { st.Requests[r.URL.Path]++ })
	// Every answer of the API, errors too, names its request.
	w.Header().Set("X-Request-Id", hashID("req_", strconv.FormatInt(s.served.Add(1), 10), r.URL.Path))
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "", "Incorrect API key provided.")
		return
	}
	s.once.Do(func() {
		m := http.NewServeMux()
		m.HandleFunc("POST /v1/files", s.faulty(s.uploadFile))
		m.HandleFunc("GET /v1/files", s.faulty(s.listFiles))
		m.HandleFunc("GET /v1/files/{id}", s.faulty(s.getFile))
		m.HandleFunc("DELETE /v1/files/{id}", s.faulty(s.deleteFile))
		m.HandleFunc("GET /v1/files/{id}/content", s.faulty(s.fileContent))
		m.HandleFunc("POST /v1/batches", s.faulty(s.createBatch))
		m.HandleFunc("GET /v1/batches", s.faulty(s.listBatches))
		m.HandleFunc("GET /v1/batches/{id}", s.faulty(s.getBatch))
		m.HandleFunc("POST /v1/batches/{id}/cancel", s.faulty(s.cancelBatch))
		m.HandleFunc("GET /v1/responses/{id}", s.faulty(s.getResponse))
		m.HandleFunc("POST /v1/responses/{id}/cancel", s.faulty(s.getResponse))
		m.HandleFunc("/", s.answer)
		s.mux = m
	})
	s.mux.ServeHTTP(w, r)
}

// DropConnection is the status by which Server.Fault asks for the
// connection to be closed without an answer.
const DropConnection = -1

// faulty answers Fault's error instead of h's answer when it gives one.
func (s *Server) faulty(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.Fault == nil {
			h(w, r)
			return
		}
		status, typ := s.Fault(r.URL.Path)
		switch {
		case status == DropConnection:
			io.Copy(io.Discard, r.Body)
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
				return
			}
			writeError(w, http.StatusInternalServerError, "server_error", "", "", "Injected fault: the connection dropped.")
		case status != 0:
			if d := s.FaultRetryAfter; d > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
				w.Header().Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
				w.Header().Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
			}
			writeError(w, status, typ, "", "", "Injected fault.")
		default:
			h(w, r)
		}
	}
}

// answer serves the model endpoints, for a caller or a batch's line.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var h func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case "/v1/chat/completions":
		h = s.chat
	case "/v1/responses":
		h = s.responses
	case "/v1/embeddings":
		h = s.embeddings
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "", "Unknown request URL: "+r.Method+" "+r.URL.Path+".")
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "", "Method "+r.Method+" not allowed for "+r.URL.Path+".")
		return
	}
	s.faulty(h)(w, r)
}

func (s *Server) authorized(r *http.Request) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		return false
	}
	return len(s.Keys) == 0 || slices.Contains(s.Keys, key)
}

// errorBody is the OpenAI error envelope.
type errorBody struct {
	Error apiError `json:"error"`
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	e := apiError{Message: msg, Type: typ}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	writeJSON(w, status, errorBody{Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body into v, answering a 400 and returning false if
// it is not valid.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "", "We could not parse the JSON body of your request. ("+err.Error()+")")
		return false
	}
	return true
}

// tier checks the requested service tier, answering the error and
// returning ok false if the request must be refused; served is the tier
// that serves it.
func (s *Server) tier(w http.ResponseWriter, model, asked string) (served string, ok bool) {
	switch asked {
	case "", "auto", "default":
		return "default", true
	case "flex":
		if !s.flexModel(model) {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "service_tier",
				"Flex is not available for this model.")
			return "", false
		}
		if s.FlexUnavailable != nil && s.FlexUnavailable(model) {
			s.count(func(st *Stats) { st.FlexRefused++ })
			writeError(w, http.StatusTooManyRequests, "resource_unavailable", "resource_unavailable", "",
				"Resource unavailable: flex capacity is exhausted, retry later or use the default tier.")
			return "", false
		}
		return "flex", true
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "service_tier",
			"Invalid value: '"+asked+"'. Supported values are: 'auto', 'default', 'flex', 'scale' and 'priority'.")
		return "", false
	}
}

func (s *Server) billed(prompt string) {
	s.count(func(st *Stats) { st.Billed[prompt]++ })
}

// words counts the whitespace-separated words of s, at least one.
func words(s string) int {
	return max(1, len(strings.Fields(s)))
}

// directedError answers the error a prompt asks for with an
// "[error:<type>]" directive, if any, and reports whether it did: type
// server_error is a 500, rate_limit_exceeded a 429, permission_error a
// 403, any other type a 400.
func directedError(w http.ResponseWriter, prompt string) bool {
	_, rest, ok := strings.Cut(prompt, "[error:")
	if !ok {
		return false
	}
	typ, _, ok := strings.Cut(rest, "]")
	if !ok || typ == "" {
		return false
	}
	status := http.StatusBadRequest
	switch typ {
	case "server_error":
		status = http.StatusInternalServerError
	case "rate_limit_exceeded":
		status = http.StatusTooManyRequests
	case "permission_error":
		status = http.StatusForbidden
	}
	writeError(w, status, typ, "", "", "emulated "+typ+" (requested by the [error:"+typ+"] directive)")
	return true
}
