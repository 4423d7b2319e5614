package proxy

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/llmfleet"
)

// storeRetryAfter is the Retry-After of a request llmfleet could not
// record in its database: an episode of the database (a restart, a
// failover, a read-only spell) usually ends within seconds.
const storeRetryAfter = 3 * time.Second

// maxStoreCause bounds the cause a store failure's message gives, in
// bytes.
const maxStoreCause = 160

// storeFailureMessage is the message of a request whose error wraps
// llmfleet.ErrStore: the component that failed is llmfleet's database,
// not the provider, which was sent nothing.
func storeFailureMessage(err error) string {
	return "llmfleet could not record the request in its database (" + storeCause(err) +
		"); nothing was sent to the provider: retry shortly"
}

// storeCause returns the innermost error of err's chain (the driver's
// own, such as "ERROR: cannot execute INSERT in a read-only transaction
// (SQLSTATE 25006)" or "connection refused"), whatever llmfleet's layers
// wrapped it in, with any credential removed, at most maxStoreCause
// bytes.
func storeCause(err error) string {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			errs := u.Unwrap()
			for i := len(errs) - 1; i >= 0 && next == nil; i-- {
				if errs[i] != nil && errs[i] != llmfleet.ErrStore {
					next = errs[i]
				}
			}
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		}
		if next == nil {
			break
		}
		err = next
	}
	msg := redactSecrets(err.Error())
	if msg == "" {
		msg = "no cause given"
	}
	if len(msg) > maxStoreCause {
		cut := maxStoreCause
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// Secrets an error's text might carry: the user information of a URL
// (postgres://user:password@host), a password setting of a connection
// string, and API keys of the providers (sk-…).
var (
	urlUserInfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@]+@`)
	passwordSet = regexp.MustCompile(`(?i)\b(password|passwd|pwd)\s*=\s*\S+`)
	apiKey      = regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{4,}`)
)

// redactSecrets returns s with the secrets it may carry replaced.
func redactSecrets(s string) string {
	s = urlUserInfo.ReplaceAllString(s, "${1}xxxxx@")
	s = passwordSet.ReplaceAllString(s, "${1}=xxxxx")
	s = apiKey.ReplaceAllString(s, "sk-xxxxx")
	return strings.TrimSpace(s)
}

// isStoreFailure reports whether err is a request llmfleet could not
// record in its database, its caller still there.
func isStoreFailure(err error) bool {
	return errors.Is(err, llmfleet.ErrStore) && !errors.Is(err, context.Canceled)
}
