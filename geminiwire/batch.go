package geminiwire

import (
	"encoding/json"
	"strconv"
	"time"
)

// The states of a batch (the SDKs map them onto JOB_STATE_*).
const (
	BatchPending   = "BATCH_STATE_PENDING"
	BatchRunning   = "BATCH_STATE_RUNNING"
	BatchSucceeded = "BATCH_STATE_SUCCEEDED"
	BatchFailed    = "BATCH_STATE_FAILED"
	BatchCancelled = "BATCH_STATE_CANCELLED"
	BatchExpired   = "BATCH_STATE_EXPIRED"
)

// The @type of a batch operation's metadata and response.
const (
	TypeBatch       = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
	TypeBatchOutput = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"
)

// Limits of Batch Mode.
const (
	// MaxInlineBytes is the most an inline batch create may carry; beyond
	// it, requests go in a file through the Files API.
	MaxInlineBytes = 20 << 20
	// MaxFileBytes is the largest input file.
	MaxFileBytes = 2 << 30
	// Expiry is how long a batch may stay pending or running before it
	// expires.
	Expiry = 48 * time.Hour
)

// Ended reports whether a state is final.
func Ended(state string) bool {
	switch state {
	case BatchSucceeded, BatchFailed, BatchCancelled, BatchExpired:
		return true
	}
	return false
}

// Count is a request count of batchStats, which the API writes as a
// decimal string ("2"); a number is read too.
type Count int64

// MarshalJSON writes the count as a string.
func (c Count) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(c), 10) + `"`), nil
}

// UnmarshalJSON reads a string or a number.
func (c *Count) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		n, err := strconv.ParseInt(s, 10, 64)
		*c = Count(n)
		return err
	}
	var n int64
	err := json.Unmarshal(b, &n)
	*c = Count(n)
	return err
}

// BatchStats counts a batch's requests by state; absent counts are 0.
type BatchStats struct {
	RequestCount           Count `json:"requestCount"`
	SuccessfulRequestCount Count `json:"successfulRequestCount,omitempty"`
	FailedRequestCount     Count `json:"failedRequestCount,omitempty"`
	PendingRequestCount    Count `json:"pendingRequestCount,omitempty"`
}

// InlinedRequest is one request of an inline batch: the request and our
// metadata, which comes back with its response.
type InlinedRequest struct {
	Request  json.RawMessage `json:"request"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// InlinedResponse is one answer of an inline batch: a response or an
// error, with the request's metadata.
type InlinedResponse struct {
	Response json.RawMessage `json:"response,omitempty"`
	Error    *Status         `json:"error,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// InputConfig is a batch's input: inline requests or an uploaded file
// ("files/<id>") of FileLine lines.
type InputConfig struct {
	Requests *struct {
		Requests []InlinedRequest `json:"requests"`
	} `json:"requests,omitempty"`
	FileName string `json:"fileName,omitempty"`
}

// BatchOutput is where an ended batch's answers are: inline for an inline
// input, a responses file for a file input.
type BatchOutput struct {
	Type             string `json:"@type,omitempty"`
	InlinedResponses *struct {
		InlinedResponses []InlinedResponse `json:"inlinedResponses"`
	} `json:"inlinedResponses,omitempty"`
	ResponsesFile string `json:"responsesFile,omitempty"`
}

// Batch is a GenerateContentBatch: the metadata of a batch operation (and
// the body of a create, of which only displayName, inputConfig and
// priority are read).
type Batch struct {
	Type        string          `json:"@type,omitempty"`
	Name        string          `json:"name,omitempty"`
	Model       string          `json:"model,omitempty"`
	DisplayName string          `json:"displayName,omitempty"`
	InputConfig *InputConfig    `json:"inputConfig,omitempty"`
	Output      *BatchOutput    `json:"output,omitempty"`
	CreateTime  *time.Time      `json:"createTime,omitempty"`
	EndTime     *time.Time      `json:"endTime,omitempty"`
	UpdateTime  *time.Time      `json:"updateTime,omitempty"`
	BatchStats  *BatchStats     `json:"batchStats,omitempty"`
	State       string          `json:"state,omitempty"`
	Priority    json.RawMessage `json:"priority,omitempty"`
}

// Operation is the long-running operation a batch is read as: its name
// "batches/<id>", its metadata, and once done its response or error.
type Operation struct {
	Name     string       `json:"name"`
	Metadata *Batch       `json:"metadata,omitempty"`
	Done     bool         `json:"done,omitempty"`
	Error    *Status      `json:"error,omitempty"`
	Response *BatchOutput `json:"response,omitempty"`
}

// CreateBatchRequest is the body of batchGenerateContent.
type CreateBatchRequest struct {
	Batch Batch `json:"batch"`
}

// ListBatchesResponse is the answer of GET /v1beta/batches.
type ListBatchesResponse struct {
	Operations    []Operation `json:"operations,omitempty"`
	NextPageToken string      `json:"nextPageToken,omitempty"`
}

// FileLine is one line of a batch input file.
type FileLine struct {
	Key     string          `json:"key"`
	Request json.RawMessage `json:"request"`
}

// ResultLine is one line of a batch's responses file: the input line's key
// and its response or error.
type ResultLine struct {
	Key      string          `json:"key"`
	Response json.RawMessage `json:"response,omitempty"`
	Error    *Status         `json:"error,omitempty"`
}
