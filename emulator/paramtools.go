package emulator

import (
	"encoding/json"
	"fmt"
	"regexp"
)

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

func (p *params) parseTools(v, choice json.RawMessage) *apiError {
	if v != nil && !isNull(v) {
		var raw []json.RawMessage
		if err := json.Unmarshal(v, &raw); err != nil {
			return invalid("tools: Input should be a valid list")
		}
		for i, r := range raw {
			var t struct {
				Type         string          `json:"type"`
				Name         *string         `json:"name"`
				InputSchema  json.RawMessage `json:"input_schema"`
				CacheControl json.RawMessage `json:"cache_control"`
			}
			if err := json.Unmarshal(r, &t); err != nil {
				return invalid("tools.%d: Input should be a valid dictionary", i)
			}
			if t.Name == nil {
				return invalid("tools.%d.name: Field required", i)
			}
			if t.Type == "" || t.Type == "custom" {
				if !toolNameRE.MatchString(*t.Name) {
					return invalid("tools.%d.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i)
				}
				if t.InputSchema == nil || isNull(t.InputSchema) {
					return invalid("tools.%d.input_schema: Field required", i)
				}
			}
			if t.CacheControl != nil && !isNull(t.CacheControl) {
				if _, e := parseCacheControl(t.CacheControl, fmt.Sprintf("tools.%d.cache_control", i)); e != nil {
					return e
				}
			}
			for _, prev := range p.tools {
				if prev.name == *t.Name {
					return invalid("tools: Tool names must be unique.")
				}
			}
			p.tools = append(p.tools, tool{raw: r, name: *t.Name})
		}
	}
	if choice == nil || isNull(choice) {
		return nil
	}
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(choice, &tc); err != nil {
		return invalid("tool_choice: Input should be a valid dictionary")
	}
	switch tc.Type {
	case "auto", "none":
	case "any":
		if len(p.tools) == 0 {
			return invalid("tool_choice: tool_choice.type 'any' requires tools")
		}
	case "tool":
		found := false
		for _, t := range p.tools {
			found = found || t.name == tc.Name
		}
		if !found {
			return invalid("tool_choice.name: Tool '%s' not found in the provided tools", tc.Name)
		}
	default:
		return invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
	}
	p.toolChoice, p.toolName = tc.Type, tc.Name
	return nil
}

func (p *params) parseThinking(v json.RawMessage) *apiError {
	if v == nil || isNull(v) {
		return nil
	}
	var th struct {
		Type         string `json:"type"`
		BudgetTokens *int64 `json:"budget_tokens"`
	}
	if err := json.Unmarshal(v, &th); err != nil {
		return invalid("thinking: Input should be a valid dictionary")
	}
	switch th.Type {
	case "enabled":
		if th.BudgetTokens == nil {
			return invalid("thinking.enabled.budget_tokens: Field required")
		}
		if *th.BudgetTokens < 1024 {
			return invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
		}
		if p.maxTokens > 0 && *th.BudgetTokens >= p.maxTokens {
			return invalid("max_tokens must be greater than thinking.budget_tokens")
		}
	case "adaptive", "disabled":
	default:
		return invalid("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'")
	}
	p.thinking = th.Type
	return nil
}
