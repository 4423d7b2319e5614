package pricing

import "strings"

// withoutDate returns model without a trailing snapshot date: "-20251001"
// (Anthropic), "@20251001" (Vertex AI) or "-2024-08-06" (OpenAI). ok is
// false when model carries none.
func withoutDate(model string) (string, bool) {
	if n := len(model); n > 9 && (model[n-9] == '-' || model[n-9] == '@') && digits(model[n-8:]) {
		return model[:n-9], true
	}
	if n := len(model); n > 11 && model[n-11] == '-' && digits(model[n-10:n-6]) &&
		model[n-6] == '-' && digits(model[n-5:n-3]) && model[n-3] == '-' && digits(model[n-2:]) {
		return model[:n-11], true
	}
	return model, false
}

// digits reports whether s is made of ASCII digits only.
func digits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}
