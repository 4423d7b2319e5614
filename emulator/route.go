package emulator

import (
	"net/http"
	"strings"
)

// Endpoint names, as counted in Stats.Calls.
const (
	EndpointMessages    = "messages"
	EndpointCountTokens = "count_tokens"
	EndpointCreate      = "create"
	EndpointRetrieve    = "retrieve"
	EndpointList        = "list"
	EndpointResults     = "results"
	EndpointCancel      = "cancel"
	EndpointDelete      = "delete"
	EndpointModels      = "models"
	EndpointModel       = "model"
	EndpointOther       = "other"
)

// routed is a request matched to an endpoint.
type routed struct {
	endpoint string
	batchID  string
	handle   func(s *Server, c *call)
}

// route matches method and path to an endpoint. Query strings (such as the
// beta client's ?beta=true) play no part.
func route(method, path string) (routed, *apiError) {
	type ep struct {
		method string
		name   string
		handle func(s *Server, c *call)
	}
	var eps []ep
	var id string
	rest, isBatches := strings.CutPrefix(path, "/v1/messages/batches")
	switch {
	case path == "/v1/messages":
		eps = []ep{{http.MethodPost, EndpointMessages, (*Server).handleMessages}}
	case path == modelsPath || path == modelsPath+"/":
		eps = []ep{{http.MethodGet, EndpointModels, (*Server).handleListModels}}
	case strings.HasPrefix(path, modelsPath+"/") && !strings.Contains(path[len(modelsPath)+1:], "/"):
		eps = []ep{{http.MethodGet, EndpointModel, (*Server).handleGetModel}}
	case path == "/v1/messages/count_tokens":
		eps = []ep{{http.MethodPost, EndpointCountTokens, (*Server).handleCountTokens}}
	case isBatches && (rest == "" || rest == "/"):
		eps = []ep{{http.MethodPost, EndpointCreate, (*Server).handleCreate}, {http.MethodGet, EndpointList, (*Server).handleList}}
	case isBatches && strings.HasPrefix(rest, "/"):
		parts := strings.Split(rest[1:], "/")
		id = parts[0]
		switch {
		case id == "":
		case len(parts) == 1:
			eps = []ep{{http.MethodGet, EndpointRetrieve, (*Server).handleRetrieve}, {http.MethodDelete, EndpointDelete, (*Server).handleDelete}}
		case len(parts) == 2 && parts[1] == "results":
			eps = []ep{{http.MethodGet, EndpointResults, (*Server).handleResults}}
		case len(parts) == 2 && parts[1] == "cancel":
			eps = []ep{{http.MethodPost, EndpointCancel, (*Server).handleCancel}}
		}
	}
	if len(eps) == 0 {
		return routed{endpoint: EndpointOther}, notFound("Not found")
	}
	for _, e := range eps {
		if e.method == method {
			return routed{endpoint: e.name, batchID: id, handle: e.handle}, nil
		}
	}
	return routed{endpoint: EndpointOther}, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error",
		message: "Method " + method + " is not allowed for " + path}
}
