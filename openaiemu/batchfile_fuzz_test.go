package openaiemu

import "testing"

// FuzzBatchFile: the input-file parser never panics, and a file it finds
// no fault in holds unique custom_ids, POST lines of the batch's endpoint
// and one model.
func FuzzBatchFile(f *testing.F) {
	f.Add([]byte(`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m"}}`+"\n"), "/v1/chat/completions")
	f.Add([]byte("{\"custom_id\":\"a\",\"method\":\"POST\",\"url\":\"/v1/embeddings\",\"body\":{\"model\":\"m\"}}\n\n{\"custom_id\":\"a\"}"), "/v1/embeddings")
	f.Fuzz(func(t *testing.T, content []byte, endpoint string) {
		lines, errs := parseBatchFile(content, endpoint)
		if len(errs) > 0 {
			return
		}
		ids, model := map[string]bool{}, ""
		for _, l := range lines {
			m := modelOfBody(l.Body)
			if ids[l.CustomID] || l.Method != "POST" || l.URL != endpoint || m == "" || (model != "" && m != model) {
				t.Fatalf("accepted line %+v of %q", l, content)
			}
			ids[l.CustomID], model = true, m
		}
	})
}
