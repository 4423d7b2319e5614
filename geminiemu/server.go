package geminiemu

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/internal/httprec"
)

// MaxBodyBytes is the largest JSON request body the emulator reads.
const MaxBodyBytes = 32 << 20

// DefaultModels are the models served when Server.Models is nil.
var DefaultModels = []string{"gemini-3.1-pro-preview", "gemini-3-flash-preview", "gemini-3.1-flash-lite-preview",
	"gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.0-flash"}

// DropConnection is the status by which Server.Fault asks for the
// connection to be closed without an answer, the request unprocessed.
const DropConnection = -1

// DropAnswer is the status by which Server.Fault asks for the request to
// be processed as usual (a batch create makes its batch) and its answer
// dropped: the connection is closed instead.
const DropAnswer = -2

// Server emulates the Gemini API. The zero value is ready to use; set the
// fields before the first request and do not change them afterwards. A
// Server is safe for concurrent use.
type Server struct {
	// Clock tells the time of batches and files and times the flex
	// latency; nil means the real clock.
	Clock llmfleet.Clock
	// Keys, if not empty, is the set of accepted API keys; empty accepts
	// any.
	Keys []string
	// Models lists the models served; nil means DefaultModels.
	Models []string
	// FlexModels lists the models that take serviceTier "flex"; nil means
	// every model served.
	FlexModels []string
	// FlexLatency is how long a flex call waits on the Clock before it is
	// answered (the API's target is 1 to 15 minutes).
	FlexLatency time.Duration
	// FlexDelay, if set, is asked for each flex call's latency instead of
	// FlexLatency (a draw per call).
	FlexDelay func(model string) time.Duration
	// Shed, if set, is asked for every flex call: 503 or 429 sheds it
	// with UNAVAILABLE or RESOURCE_EXHAUSTED (not billed), 0 serves it.
	Shed func(model string) int
	// RetryDelay, if positive, is the retryDelay of the RetryInfo a shed
	// call or a faulted 429 or 503 carries.
	RetryDelay time.Duration
	// Fault, if set, is asked for every request after authentication,
	// with its path; a non-zero status is answered instead, in Google's
	// envelope, and DropConnection closes the connection once the request
	// is read. It is asked for each request of a batch too, with the
	// model method's path: a fault there is that request's error.
	Fault func(path string) int
	// BatchPending is how long a batch stays PENDING after its create.
	BatchPending time.Duration
	// BatchTurnaround is how long a batch takes from its create to its
	// end; 0 means DefaultBatchTurnaround. 48 hours or more makes it
	// expire.
	BatchTurnaround time.Duration
	// LandAfter, if set, is asked for each batch create the API would
	// accept, with its displayName: a positive d drops the connection
	// without an answer and makes the batch land d later on the Clock
	// (created then, not found nor listed before), as a create whose
	// client gave up though it was processed late.
	LandAfter func(displayName string) time.Duration

	mu      sync.Mutex
	stats   Stats
	seq     int
	batches map[string]*batch
	files   map[string]*file
	uploads map[string]*upload
	seen    map[string]bool // implicit cache: key, model and system text
	once    sync.Once
	mux     *http.ServeMux
}

// Stats counts what the Server answered.
type Stats struct {
	// Requests counts requests per path, refused ones included.
	Requests map[string]int
	// Billed counts billed answers per prompt (the last user text).
	Billed map[string]int
	// Shed counts flex calls shed.
	Shed int
	// Created counts the batches created (landed) by displayName: the
	// tag llmfleet gives each batch.
	Created map[string]int
	// Submissions are the requests of the batches created (landed),
	// each paid for once its batch runs.
	Submissions []Submission
	// ResultsRead counts, by batch id, the reads of an ended batch
	// (GET /v1beta/batches/{id}), which carry its results.
	ResultsRead map[string]int
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Stats{Requests: maps.Clone(s.stats.Requests), Billed: maps.Clone(s.stats.Billed), Shed: s.stats.Shed,
		ResultsRead: maps.Clone(s.stats.ResultsRead)}
	if out.Requests == nil {
		out.Requests, out.Billed = map[string]int{}, map[string]int{}
	}
	if out.ResultsRead == nil {
		out.ResultsRead = map[string]int{}
	}
	out.Created, out.Submissions = s.submissionsLocked(s.now())
	return out
}

func (s *Server) count(f func(st *Stats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stats.Requests == nil {
		s.stats.Requests, s.stats.Billed = map[string]int{}, map[string]int{}
	}
	f(&s.stats)
}

func (s *Server) clock() llmfleet.Clock {
	if s.Clock == nil {
		return llmfleet.RealClock{}
	}
	return s.Clock
}

func (s *Server) now() time.Time { return s.clock().Now().UTC() }

func (s *Server) served(model string) bool {
	if s.Models == nil {
		return slices.Contains(DefaultModels, model)
	}
	return slices.Contains(s.Models, model)
}

func (s *Server) flexModel(model string) bool {
	return s.FlexModels == nil || slices.Contains(s.FlexModels, model)
}

// ServeHTTP authenticates a request and routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.count(func(st *Stats) { st.Requests[r.URL.Path]++ })
	if !s.authorized(w, r) {
		return
	}
	s.once.Do(func() {
		m := http.NewServeMux()
		for _, v := range []string{geminiwire.Version, geminiwire.VersionV1} {
			m.HandleFunc("POST /"+v+"/models/{method}", s.faulty(s.modelMethod))
			m.HandleFunc("GET /"+v+"/models", s.faulty(s.listModels))
			m.HandleFunc("GET /"+v+"/models/{method}", s.faulty(s.getModel))
		}
		m.HandleFunc("GET /v1beta/batches", s.faulty(s.listBatches))
		m.HandleFunc("GET /v1beta/batches/{id}", s.faulty(s.getBatch))
		m.HandleFunc("POST /v1beta/batches/{id}", s.faulty(s.cancelBatch))
		m.HandleFunc("DELETE /v1beta/batches/{id}", s.faulty(s.deleteBatch))
		m.HandleFunc("POST /upload/v1beta/files", s.faulty(s.uploadFile))
		m.HandleFunc("GET /v1beta/files", s.faulty(s.listFiles))
		m.HandleFunc("GET /v1beta/files/{id}", s.faulty(s.getFile))
		m.HandleFunc("DELETE /v1beta/files/{id}", s.faulty(s.deleteFile))
		m.HandleFunc("GET /download/v1beta/files/{id}", s.faulty(s.downloadFile))
		m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server.")
		})
		s.mux = m
	})
	s.mux.ServeHTTP(w, r)
}

// apiKey returns the request's key: x-goog-api-key, else ?key=.
func apiKey(r *http.Request) string { return geminiwire.RequestKey(r.Header, r.URL.Query()) }

// authorized answers the API's error for a missing or refused key.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	key := apiKey(r)
	switch {
	case key == "":
		writeError(w, http.StatusForbidden, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return false
	case len(s.Keys) > 0 && !slices.Contains(s.Keys, key):
		info, _ := json.Marshal(map[string]any{"@type": geminiwire.TypeErrorInfo, "reason": "API_KEY_INVALID",
			"domain": "googleapis.com", "metadata": map[string]string{"service": "generativelanguage.googleapis.com"}})
		writeError(w, http.StatusBadRequest, "API key not valid. Please pass a valid API key.", info)
		return false
	}
	return true
}

// faulty answers Fault's error instead of h's answer when it gives one.
func (s *Server) faulty(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status := 0
		if s.Fault != nil {
			status = s.Fault(r.URL.Path)
		}
		switch {
		case status == DropConnection:
			io.Copy(io.Discard, r.Body)
			dropConnection(w)
		case status == DropAnswer:
			h(&httprec.Recorder{}, r)
			dropConnection(w)
		case status != 0:
			writeError(w, status, "Injected fault.", s.retryInfo(status)...)
		default:
			h(w, r)
		}
	}
}

// dropConnection closes the connection of w without an answer.
func dropConnection(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		c.Close()
		return
	}
	writeError(w, http.StatusInternalServerError, "Injected fault: the connection dropped.")
}

// retryInfo returns the RetryInfo detail a 429 or 503 carries, if any.
func (s *Server) retryInfo(status int) []json.RawMessage {
	if s.RetryDelay > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
		return []json.RawMessage{geminiwire.RetryInfo(s.RetryDelay)}
	}
	return nil
}

// modelMethod serves POST /v1beta/models/{model}:{method}, and under /v1
// the methods but batchGenerateContent.
func (s *Server) modelMethod(w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(r.PathValue("method"), ":")
	_, version, _ := geminiwire.Unversioned(r.URL.Path)
	if !ok || model == "" || (version == geminiwire.VersionV1 && method == geminiwire.MethodBatch) {
		writeError(w, http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server.")
		return
	}
	if !s.served(model) {
		writeError(w, http.StatusNotFound, "models/"+model+" is not found for API version "+version+", or is not supported for "+
			method+". Call ListModels to see the list of available models and their supported methods.")
		return
	}
	switch method {
	case geminiwire.MethodGenerate, geminiwire.MethodStream:
		s.generate(w, r, model, method == geminiwire.MethodStream)
	case geminiwire.MethodBatch:
		s.createBatch(w, r, model)
	case "countTokens":
		s.countTokens(w, r, model)
	default:
		writeError(w, http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server.")
	}
}

// writeError answers Google's error envelope.
func writeError(w http.ResponseWriter, status int, msg string, details ...json.RawMessage) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	w.Write(geminiwire.Envelope(status, msg, details...))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// readBody reads a JSON body, answering 400 and returning nil if it is
// too large or not a JSON object.
func readBody(w http.ResponseWriter, r *http.Request) []byte {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "Request payload size exceeds the limit: 33554432 bytes.")
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
		return nil
	}
	return b
}
