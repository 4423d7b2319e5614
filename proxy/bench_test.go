package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet/proxy"
)

// benchmarkPost posts simpleBody to url b.N times, with hdr.
func benchmarkPost(b *testing.B, url string, hdr ...string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", url, strings.NewReader(simpleBody))
			req.Header.Set("X-Api-Key", "sk-bench")
			for i := 0; i+1 < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// BenchmarkSyncPath compares the proxy's sync route with a bare
// httputil.ReverseProxy and with calling the upstream directly.
func BenchmarkSyncPath(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`))
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	bare := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, FlushInterval: -1})
	defer bare.Close()
	srv := &proxy.Server{Upstream: u, Submitter: &fakeSubmitter{route: "sync"}, DefaultBudget: 0}
	ours := httptest.NewServer(srv.Handler())
	defer ours.Close()

	b.Run("direct", func(b *testing.B) { benchmarkPost(b, up.URL+"/v1/messages") })
	b.Run("bare-reverse-proxy", func(b *testing.B) { benchmarkPost(b, bare.URL+"/v1/messages") })
	b.Run("proxy-no-budget", func(b *testing.B) { benchmarkPost(b, ours.URL+"/v1/messages") })
	b.Run("proxy-budget-planned-sync", func(b *testing.B) {
		benchmarkPost(b, ours.URL+"/v1/messages", "llmfleet-latency-budget-ms", "1000")
	})
}
