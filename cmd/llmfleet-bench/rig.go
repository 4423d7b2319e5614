package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/llmfleet/llmfleet/internal/envflag"
)

// benchRig is the processes of one proxy benchmark run: the upstream and
// the targets in front of it, which it stops on close.
type benchRig struct {
	dir     string   // temporary: logs, the CA, serve's database
	self    string   // this command's executable, for the children it runs
	env     []string // the children's environment, trusting the run's CA
	ca      *benchCA
	client  *http.Client // trusting the CA
	targets []benchTarget
	procs   []*exec.Cmd
	cancel  context.CancelFunc
}

// startRig makes the CA and starts the upstream, the bare proxy, serve
// and, with f.portkey, the Portkey gateway; each is ready when it
// returns.
func startRig(ctx context.Context, f *benchFlags) (_ *benchRig, err error) {
	rig := &benchRig{cancel: func() {}}
	defer func() {
		if err != nil {
			rig.close()
		}
	}()
	if rig.self, err = os.Executable(); err != nil {
		return nil, err
	}
	if rig.dir, err = os.MkdirTemp("", "llmfleet-bench-"); err != nil {
		return nil, err
	}
	if rig.ca, err = makeCA(rig.dir); err != nil {
		return nil, err
	}
	if rig.client, err = rig.ca.client(); err != nil {
		return nil, err
	}
	rig.env = rig.ca.env(envflag.ChildEnv())
	pctx, cancel := context.WithCancel(context.Background())
	rig.cancel = cancel
	up, err := rig.start(ctx, pctx, "upstream", "https", "/readyz", rig.self, upstreamCommand,
		"--cert", rig.ca.certFile, "--key", rig.ca.keyFile)
	if err != nil {
		return nil, err
	}
	bare, err := rig.start(ctx, pctx, "bare", "http", "/readyz", rig.self, bareProxyCommand, "--upstream", up.url)
	if err != nil {
		return nil, err
	}
	serve, err := rig.start(ctx, pctx, "serve", "http", "/readyz", f.llmfleet, "serve", "--anthropic-url", up.url,
		"--db", filepath.Join(rig.dir, "bench.db"), "--secret-file", filepath.Join(rig.dir, "secret"))
	if err != nil {
		return nil, err
	}
	up.name, bare.name, serve.name = directTarget, bareTarget, serveTarget
	rig.targets = []benchTarget{up, bare, serve}
	for i, v := range f.variants {
		t, err := rig.startVariant(ctx, pctx, i+2, v, f.llmfleet, up.url)
		if err != nil {
			return nil, err
		}
		rig.targets = append(rig.targets, t)
	}
	if f.portkey != "" {
		pk, err := rig.startPortkey(ctx, pctx, f.portkey, up.url)
		if err != nil {
			return nil, err
		}
		rig.targets = append(rig.targets, pk)
	}
	return rig, nil
}

// startVariant starts the variant v, the nth target of its kind: a bare
// proxy run by another llmfleet-bench binary ("bare=PATH"), else a serve
// target with v's flags, run by llmfleet (the binary of a first word
// bin=PATH, else def).
func (rig *benchRig) startVariant(ctx, pctx context.Context, n int, v, def, upstream string) (benchTarget, error) {
	if bin, ok := strings.CutPrefix(v, "bare="); ok {
		t, err := rig.start(ctx, pctx, fmt.Sprintf("bare%d", n), "http", "/readyz", bin, bareProxyCommand, "--upstream", upstream)
		t.name = "bare " + bin
		return t, err
	}
	name := fmt.Sprintf("serve%d", n)
	bin, flags := variantBin(v, def)
	args := append([]string{"serve", "--anthropic-url", upstream, "--db", filepath.Join(rig.dir, name+".db"),
		"--secret-file", filepath.Join(rig.dir, "secret")}, flags...)
	t, err := rig.start(ctx, pctx, name, "http", "/readyz", bin, args...)
	t.name = "serve " + v
	return t, err
}

// start starts one server process given --listen on a free port and
// waits until GET ready answers 200 on it.
func (rig *benchRig) start(ctx, pctx context.Context, name, scheme, ready, bin string, args ...string) (benchTarget, error) {
	addr, err := freeAddr()
	if err != nil {
		return benchTarget{}, err
	}
	p, err := startProc(pctx, rig.dir, name, rig.env, bin, append(args, "--listen", addr)...)
	if err != nil {
		return benchTarget{}, err
	}
	rig.procs = append(rig.procs, p)
	base := scheme + "://" + addr
	if err := waitUp(ctx, rig.client, base+ready, false); err != nil {
		log, _ := os.ReadFile(filepath.Join(rig.dir, name+".log"))
		return benchTarget{}, fmt.Errorf("%s: %w\n%s", name, err, log)
	}
	return benchTarget{name: name, url: base, pid: p.Process.Pid}, nil
}

// startPortkey starts the Portkey gateway under node, as an Anthropic
// gateway in front of upstream.
func (rig *benchRig) startPortkey(ctx, pctx context.Context, server, upstream string) (benchTarget, error) {
	addr, err := freeAddr()
	if err != nil {
		return benchTarget{}, err
	}
	_, port, _ := strings.Cut(addr, ":")
	p, err := startProc(pctx, rig.dir, "portkey", rig.env, "node", server, "--port="+port, "--headless")
	if err != nil {
		return benchTarget{}, err
	}
	rig.procs = append(rig.procs, p)
	base := "http://" + addr
	if err := waitUp(ctx, rig.client, base+"/", true); err != nil {
		log, _ := os.ReadFile(filepath.Join(rig.dir, "portkey.log"))
		return benchTarget{}, fmt.Errorf("portkey: %w\n%s", err, log)
	}
	return benchTarget{name: portkeyTarget, url: base, pid: p.Process.Pid,
		hdr: map[string]string{"x-portkey-provider": "anthropic", "x-portkey-custom-host": upstream + "/v1"}}, nil
}

// close stops the processes and removes the temporary directory.
func (rig *benchRig) close() {
	rig.cancel()
	for _, p := range rig.procs {
		p.Wait()
	}
	if rig.dir != "" {
		os.RemoveAll(rig.dir)
	}
}

// protocols returns the counts of the calls the upstream (the first
// target) served by protocol.
func (rig *benchRig) protocols(ctx context.Context) (map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rig.targets[0].url+protocolsPath, nil)
	if err != nil {
		return nil, err
	}
	resp, err := rig.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var n map[string]int64
	return n, json.NewDecoder(resp.Body).Decode(&n)
}

// variantBin splits a -variant into the llmfleet binary it runs (its
// first word bin=PATH, else def) and its flags.
func variantBin(v, def string) (string, []string) {
	words := strings.Fields(v)
	if len(words) > 0 {
		if bin, ok := strings.CutPrefix(words[0], "bin="); ok && bin != "" {
			return bin, words[1:]
		}
	}
	return def, words
}
