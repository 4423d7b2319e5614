package proxy_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// BenchmarkSyncPathTLS compares, over an HTTPS upstream speaking HTTP/2
// (as every provider does), a bare httputil.ReverseProxy with the proxy's
// sync route, observed (ledger tap on) and not, and observed with the
// access log's hook as serve sets it. Both reverse proxies use
// the same transport: a clone of http.DefaultTransport trusting the
// upstream's certificate. The callers reach them over plain HTTP/1.1.
func BenchmarkSyncPathTLS(b *testing.B) {
	var proto atomic.Int32
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(int32(r.ProtoMajor))
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`))
	}))
	up.EnableHTTP2 = true
	up.StartTLS()
	defer up.Close()
	u, _ := url.Parse(up.URL)
	transport := func() http.RoundTripper {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		t.ForceAttemptHTTP2 = true
		t.MaxIdleConnsPerHost = 256
		return t
	}
	bare := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, Transport: transport()})
	defer bare.Close()
	plain := httptest.NewServer((&proxy.Server{Upstream: u, Transport: transport()}).Handler())
	defer plain.Close()
	observed := httptest.NewServer((&proxy.Server{Upstream: u, Transport: transport(),
		Observe: func(llmfleet.LedgerEntry) {}, UpstreamError: func(string) {}}).Handler())
	defer observed.Close()
	// As serve runs it: the access log's hook on too.
	served := httptest.NewServer((&proxy.Server{Upstream: u, Transport: transport(),
		Observe: func(llmfleet.LedgerEntry) {}, UpstreamError: func(string) {}, Access: func(proxy.Access) {}}).Handler())
	defer served.Close()
	b.Run("bare-reverse-proxy", func(b *testing.B) { benchmarkPost(b, bare.URL+"/v1/messages") })
	b.Run("proxy", func(b *testing.B) { benchmarkPost(b, plain.URL+"/v1/messages") })
	b.Run("proxy-observed", func(b *testing.B) { benchmarkPost(b, observed.URL+"/v1/messages") })
	b.Run("proxy-observed-accesslog", func(b *testing.B) { benchmarkPost(b, served.URL+"/v1/messages") })
	if proto.Load() != 2 {
		b.Fatalf("the upstream was reached over HTTP/%d, want HTTP/2", proto.Load())
	}
}
