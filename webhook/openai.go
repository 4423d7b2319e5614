package webhook

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// OpenAIPath is where llmfleet serve takes OpenAI's webhooks.
const OpenAIPath = "/llmfleet/v1/webhooks/openai"

// maxBody bounds a delivery's body: an event is a few hundred bytes.
const maxBody = 1 << 20

// maxRemembered bounds the webhook-ids remembered to tell a replayed
// delivery.
const maxRemembered = 10000

// batchEnded reports whether an OpenAI event type tells a batch ended.
func batchEnded(typ string) bool {
	switch typ {
	case "batch.completed", "batch.failed", "batch.expired", "batch.cancelled":
		return true
	}
	return false
}

// OpenAI serves POST OpenAIPath: a verified delivery of a batch event
// (batch.completed, batch.failed, batch.expired, batch.cancelled) makes
// PollNow look at the batch its data.id names, and is answered 200,
// whether the batch is known here or not (another replica's, or one
// already answered: polling stays the guarantee); other events are
// acknowledged and ignored. A delivery is refused 400 without its
// headers or with a timestamp out of Tolerance, 401 with a signature
// that does not match; without Secret, every delivery is answered 503
// naming what to set. A webhook-id delivered again is acknowledged and
// ignored. Errors are in OpenAI's envelope.
type OpenAI struct {
	// Secret is the signing key (ParseSecret); nil turns webhooks off.
	Secret []byte
	// SecretEnv names the environment variable the secret is read from,
	// for the answer when there is none.
	SecretEnv string
	// PollNow asks the engine to look at an OpenAI batch at once and
	// reports whether it tracks it (dispatch.Dispatcher.PollNow).
	PollNow func(batchID string) bool
	// Clock tells the time (nil: the real clock); Logger gets a line per
	// delivery (nil: none).
	Clock  llmfleet.Clock
	Logger *slog.Logger

	mu   sync.Mutex
	seen map[string]time.Time // webhook-ids taken, by when they may be forgotten
}

// Mount returns a handler that serves OpenAIPath with h and everything
// else with next.
func (h *OpenAI) Mount(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != OpenAIPath {
			next.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP takes one delivery in.
func (h *OpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "This endpoint takes POST deliveries of OpenAI webhooks.")
		return
	}
	if h.Secret == nil {
		refuse(w, http.StatusServiceUnavailable, "server_error", "webhook_secret_not_set", "OpenAI webhooks are off on this server: set $"+
			h.SecretEnv+" to the endpoint's signing secret (whsec_...) from OpenAI's dashboard, or name another variable with --openai-webhook-secret-env, and restart.")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "body_too_large", "A webhook delivery is at most 1 MiB.")
		}
		return
	}
	now := llmfleet.Now(h.Clock)
	if err := Verify(h.Secret, r.Header, body, now); err != nil {
		rf := err.(*Refusal)
		h.log().Warn("openai webhook refused", "status", rf.Status, "cause", rf.Code)
		refuse(w, rf.Status, "invalid_request_error", rf.Code, rf.Msg)
		return
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		refuse(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", "The delivery's body is not an event object: "+err.Error())
		return
	}
	if h.first(r.Header.Get("Webhook-Id"), now) && batchEnded(ev.Type) && ev.Data.ID != "" {
		tracked := h.PollNow != nil && h.PollNow(ev.Data.ID)
		h.log().Info("openai webhook", "type", ev.Type, "batch_id", ev.Data.ID, "tracked", tracked)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}"))
}

// first reports whether the delivery id was not taken in the last two
// Tolerances: a delivery sent again (by the sender's retries, or
// replayed) is taken once; one older than that is refused by its
// timestamp.
func (h *OpenAI) first(id string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[string]time.Time{}
	}
	if until, ok := h.seen[id]; ok && now.Before(until) {
		return false
	}
	if len(h.seen) >= maxRemembered {
		for k, until := range h.seen {
			if !now.Before(until) {
				delete(h.seen, k)
			}
		}
	}
	if len(h.seen) < maxRemembered {
		h.seen[id] = now.Add(2 * Tolerance)
	}
	return true
}

func (h *OpenAI) log() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// refuse answers an error in OpenAI's envelope.
func refuse(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(openaiwire.Envelope(typ, code, "", msg))
}
