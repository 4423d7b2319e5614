package emulator

import (
	"maps"

	"github.com/llmfleet/llmfleet/pricing"
)

// TestModel is a model id the emulator serves besides the real ones. No
// price table prices it, so tests can send traffic that must be counted
// and flagged unpriced; the real API would refuse it.
const TestModel = "claude-test"

// modelNames is what the emulator knows of model ids, fixed at the first
// request: the ids it serves and the dated id an answer names for each.
type modelNames struct {
	known map[string]bool
	dated map[string]string // alias -> dated id
}

// newModelNames resolves the Models and ModelIDs fields: the served ids
// are the listed models, the aliases (of the price table or of ModelIDs)
// that lead to them, and TestModel.
func (s *Server) newModelNames() *modelNames {
	tab := pricing.Default()
	ids := s.Models
	if ids == nil {
		ids = tab.Models(pricing.DefaultProvider)
	}
	aliases := tab.Aliases(pricing.DefaultProvider)
	dated := s.ModelIDs
	if dated == nil {
		dated = aliases
	}
	n := &modelNames{known: map[string]bool{TestModel: true}, dated: maps.Clone(dated)}
	for _, id := range ids {
		n.known[id] = true
	}
	for _, m := range []map[string]string{aliases, dated} {
		for alias, id := range m {
			if n.known[id] {
				n.known[alias] = true
			}
		}
	}
	return n
}

// checkModel refuses a model the emulator does not serve, as the real API
// answers it: 404 not_found_error, "model: <id>".
func (s *Server) checkModel(model string) *apiError {
	if s.names.known[model] {
		return nil
	}
	return notFound("model: %s", model)
}

// answerModel returns the model id an answer names for a request of
// model: the dated id of an alias (claude-haiku-4-5 is answered by
// claude-haiku-4-5-20251001), else model.
func (s *Server) answerModel(model string) string {
	if id, ok := s.names.dated[model]; ok {
		return id
	}
	return model
}
