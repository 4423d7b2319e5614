package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/emulator"
)

// benchCA is the files of the self-signed certificate authority of one
// benchmark run and of the upstream's certificate it signed.
type benchCA struct {
	caFile   string // the CA's certificate: the clients trust it (SSL_CERT_FILE)
	certFile string // the upstream's certificate, for 127.0.0.1 and localhost
	keyFile  string // its key
}

// makeCA writes a fresh CA and a server certificate it signed into dir.
func makeCA(dir string) (*benchCA, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "llmfleet-bench CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	ca := &benchCA{caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "cert.pem"), keyFile: filepath.Join(dir, "key.pem")}
	return ca, errors.Join(
		writePEM(ca.caFile, "CERTIFICATE", caDER),
		writePEM(ca.certFile, "CERTIFICATE", der),
		writePEM(ca.keyFile, "EC PRIVATE KEY", keyDER))
}

// writePEM writes one PEM block to file.
func writePEM(file, typ string, der []byte) error {
	return os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// client returns an HTTP client trusting the CA.
func (ca *benchCA) client() (*http.Client, error) {
	pem, err := os.ReadFile(ca.caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", ca.caFile)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig.RootCAs = pool
	return &http.Client{Transport: t, Timeout: 5 * time.Second}, nil
}

// env returns the children's environment trusting the CA alone: Go
// reads SSL_CERT_FILE for its system roots, node NODE_EXTRA_CA_CERTS.
func (ca *benchCA) env(base []string) []string {
	return append(base[:len(base):len(base)], "SSL_CERT_FILE="+ca.caFile, "NODE_EXTRA_CA_CERTS="+ca.caFile)
}

// runUpstream is the upstream of the proxy benchmark: the Anthropic API
// emulator answering at once (as "llmfleet emulate --latency 0"), over
// TLS, where net/http speaks HTTP/2 to the clients that offer it by ALPN,
// as every provider does. GET /readyz answers 200.
func runUpstream(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("llmfleet-bench "+upstreamCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	cert := fs.String("cert", "", "certificate file (PEM)")
	key := fs.String("key", "", "key file (PEM)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cache := cachesim.Default()
	emu := &emulator.Server{Turnaround: func(string, *mrand.Rand) time.Duration { return time.Second }, Cache: &cache}
	var protos protoCounts
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET "+protocolsPath, protos.serve)
	mux.Handle("/", protos.count(emu))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.ServeTLS(ln, *cert, *key); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// protocolsPath is the upstream's count of the calls it served by
// protocol, as JSON: {"HTTP/2.0": 1234}.
const protocolsPath = "/bench/protocols"

// protoCounts counts the calls an upstream served by protocol.
type protoCounts struct {
	mu sync.Mutex
	n  map[string]int64
}

// count returns h counting each call by its protocol.
func (p *protoCounts) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		if p.n == nil {
			p.n = map[string]int64{}
		}
		p.n[r.Proto]++
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// serve answers the counts as JSON.
func (p *protoCounts) serve(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	b, _ := json.Marshal(p.n)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
