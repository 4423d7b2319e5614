package storecodec

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/llmfleet/llmfleet"
)

// A result is stored in three columns:
//
//   - status_code: StoredResult.StatusCode.
//   - result_body: the bytes the result carries, byte for byte: Body on
//     success, Err.Body (the provider's error envelope, if any) on error.
//     A ResultError's Body is kept here rather than in its JSON, which
//     would compact it and escape it.
//   - result_error: the JSON of Err without its Body; the JSON null on
//     success. Only rows completed by schema 2 have it NULL.
//
// With Err set, StoredResult.Body is not stored: it is nil by the
// contract of llmfleet.StoredResult.

// ResultColumns returns the status_code, result_body and result_error
// values of res.
func ResultColumns(res *llmfleet.StoredResult) (status int, body, errJSON []byte, err error) {
	if res.Err == nil {
		return res.StatusCode, res.Body, []byte("null"), nil
	}
	e := *res.Err
	e.Body = nil
	errJSON, err = json.Marshal(&e)
	if err != nil {
		return 0, nil, nil, err
	}
	return res.StatusCode, res.Err.Body, errJSON, nil
}

// ResultOf decodes what resultColumns encoded. A NULL errJSON is a row
// completed by schema 2: see legacyResult.
func ResultOf(status sql.NullInt64, body, errJSON []byte) (*llmfleet.StoredResult, error) {
	res := &llmfleet.StoredResult{StatusCode: int(status.Int64)}
	if errJSON == nil {
		LegacyResult(res, body)
		return res, nil
	}
	if err := json.Unmarshal(errJSON, &res.Err); err != nil {
		return nil, fmt.Errorf("result error: %w", err)
	}
	if res.Err == nil {
		res.Body = body
	} else if len(body) > 0 {
		res.Err.Body = body
	}
	return res, nil
}

// LegacyResult reads a result stored by schema 2, which kept only the
// status and the body the synchronous API would have answered: the answer
// for status 200, a rendered error envelope for any other. Such an error
// is read as a provider error (KindProvider) with that status and the
// envelope as its Body, and its type, message and request id taken from
// the envelope when it parses; the result's Body is then nil.
func LegacyResult(res *llmfleet.StoredResult, body []byte) {
	if res.StatusCode == http.StatusOK {
		res.Body = body
		return
	}
	e := &llmfleet.ResultError{Kind: llmfleet.KindProvider, StatusCode: res.StatusCode}
	if len(body) > 0 {
		e.Body = body
	}
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(body, &env) == nil {
		e.Type, e.Message, e.RequestID = env.Error.Type, env.Error.Message, env.RequestID
	}
	res.Err = e
}
