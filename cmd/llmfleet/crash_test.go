package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// This file kills the real "llmfleet serve" process with SIGKILL, with
// requests still queued and with their batch in flight upstream, restarts
// it on the same database and checks that every ticket resolves to its own
// answer, that nothing was submitted upstream twice, and that no API key
// can be read from the state files or the logs. The emulator runs as a
// process of its own, so that its batches outlive the proxy.

// built is the llmfleet binary the tests run, built once per test
// process into a directory TestMain removes.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildBinary builds the llmfleet command, once, into a temporary
// directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the llmfleet binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build llmfleet with")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "llmfleet-bin-"); built.err != nil {
			return
		}
		bin := filepath.Join(built.dir, "llmfleet")
		if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// process is a running llmfleet command.
type process struct {
	cmd  *exec.Cmd
	url  string // the base URL it printed
	logs string // the file its stderr goes to
}

var urlRE = regexp.MustCompile(`http://[^ ]+`)

// start runs bin with args and waits for the address it prints.
func start(t *testing.T, bin, logs string, args ...string) *process {
	t.Helper()
	logf, err := os.OpenFile(logs, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), SecretEnv+"=") // the secret file, not the environment
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, logs: logs}
	t.Cleanup(func() { p.kill() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		p.url = urlRE.FindString(line)
		if p.url == "" {
			t.Fatalf("%s %s printed %q", bin, args[0], line)
		}
	case <-time.After(20 * time.Second):
		b, _ := os.ReadFile(logs)
		t.Fatalf("%s %v did not start:\n%s", bin, args, b)
	}
	return p
}

// kill ends the process with SIGKILL: nothing is flushed or closed.
func (p *process) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

// crashClient talks to the proxy and the emulator over HTTP.
type crashClient struct {
	t   *testing.T
	key string
}

func (c *crashClient) do(method, url, body string, hdr ...string) (int, http.Header, []byte) {
	c.t.Helper()
	return sendJSON(c.t, method, url, body, append([]string{"X-Api-Key", c.key, "Anthropic-Version", "2023-06-01"}, hdr...)...)
}

// sendJSON sends a JSON body with the headers hdr (name, value, ...) and
// returns the answer's status, headers and body.
func sendJSON(t *testing.T, method, url, body string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// submit sends one async request per prompt and returns their ids.
func (c *crashClient) submit(base string, prompts []string) []string {
	c.t.Helper()
	var ids []string
	for _, p := range prompts {
		body := fmt.Sprintf(`{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":%q}]}`, p)
		status, h, b := c.do("POST", base+"/v1/messages", body, "Prefer", "respond-async")
		if status != http.StatusAccepted || h.Get("Location") == "" {
			c.t.Fatalf("async %s: %d %s", p, status, b)
		}
		ids = append(ids, h.Get("llmfleet-request-id"))
	}
	return ids
}

// status returns the status of a pending request ("" once answered).
func (c *crashClient) status(base, id string) string {
	c.t.Helper()
	code, _, b := c.do("GET", base+proxy.RequestsPath+id, "")
	if code != http.StatusAccepted {
		return ""
	}
	var tk struct{ Status string }
	json.Unmarshal(b, &tk)
	return tk.Status
}

// resolve polls every ticket until it is answered and checks that each
// got the answer to its own prompt.
func (c *crashClient) resolve(base string, ids, prompts []string) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i, id := range ids {
		for {
			code, _, b := c.do("GET", base+proxy.RequestsPath+id, "")
			if code == http.StatusAccepted && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			var msg struct {
				Content []struct{ Text string }
			}
			json.Unmarshal(b, &msg)
			if code != http.StatusOK || len(msg.Content) != 1 || msg.Content[0].Text != "Answer to: "+prompts[i] {
				c.t.Fatalf("ticket %s of %q: %d %s", id, prompts[i], code, b)
			}
			break
		}
	}
}

// stats reads the emulator's statistics.
func (c *crashClient) stats(emu string) emulator.Stats {
	c.t.Helper()
	_, _, b := c.do("GET", emu+emulator.StatsPath, "")
	var st emulator.Stats
	if err := json.Unmarshal(b, &st); err != nil {
		c.t.Fatalf("emulator stats: %v: %s", err, b)
	}
	return st
}

func TestCrashRecovery(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	bin := buildBinary(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	key := "sk-ant-api03-crashtest-" + llmfleet.NewID("")
	c := &crashClient{t: t, key: key}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("LLMFLEET_CRASH_LOGS") != "" {
			b, _ := os.ReadFile(logs)
			t.Logf("logs of the processes:\n%s", b)
		}
	})

	emu := start(t, bin, logs, "emulate", "--listen", "127.0.0.1:0", "--turnaround", "3s")
	serve := func(db string, window string) *process {
		return start(t, bin, logs, "serve", "--listen", "127.0.0.1:0", "--anthropic-url", emu.url,
			"--db", db, "--batch-window", window, "--poll-interval", "50ms", "--max-poll-interval", "200ms",
			"--turnaround-prior", "3s", "--shutdown-timeout", "1s")
	}
	prompts := func(prefix string) []string {
		var ps []string
		for i := range 5 {
			ps = append(ps, fmt.Sprintf("%s request %d", prefix, i))
		}
		return ps
	}

	t.Run("queued", func(t *testing.T) {
		c.t = t
		db := filepath.Join(dir, "queued", "llmfleet.db")
		ps := prompts("queued")
		s := serve(db, "1h") // the pool waits: fewer than batch-min-size requests
		ids := c.submit(s.url, ps)
		if st := c.status(s.url, ids[0]); st != "queued" {
			t.Fatalf("status %q before the crash", st)
		}
		s.kill()
		if n := len(c.stats(emu.url).Submissions); n != 0 {
			t.Fatalf("%d requests reached the emulator before the crash", n)
		}
		s = serve(db, "50ms")
		c.resolve(s.url, ids, ps)
		s.kill()
	})

	t.Run("in flight", func(t *testing.T) {
		c.t = t
		db := filepath.Join(dir, "inflight", "llmfleet.db")
		ps := prompts("in-flight")
		before := len(c.stats(emu.url).Submissions)
		s := serve(db, "50ms")
		ids := c.submit(s.url, ps)
		// Wait for the batch to be created upstream, then kill the proxy
		// at once, long before the batch's 3s turnaround ends.
		deadline := time.Now().Add(10 * time.Second)
		var st emulator.Stats
		for st = c.stats(emu.url); len(st.Submissions) < before+len(ps); st = c.stats(emu.url) {
			if time.Now().After(deadline) {
				t.Fatalf("batch not created upstream: %+v", st.Submissions)
			}
			time.Sleep(5 * time.Millisecond)
		}
		s.kill()
		batch := st.Submissions[before].BatchID
		if st.Batches[batch].Results != 0 {
			t.Fatalf("results of %s were read before the crash", batch)
		}
		s = serve(db, "50ms")
		c.resolve(s.url, ids, ps)
		s.kill()
		if got := c.stats(emu.url).Batches[batch]; got.Results == 0 {
			t.Fatalf("batch %s: %+v; the recovered proxy did not read it", batch, got)
		}
	})

	st := c.stats(emu.url)
	if dup := st.DuplicateParams(); len(dup) != 0 {
		t.Fatalf("requests submitted upstream twice: %v", dup)
	}
	if n := len(st.Submissions); n != 10 {
		t.Fatalf("%d requests submitted upstream, want 10", n)
	}

	// No state file, and no log line, holds the API key, raw or encoded.
	needles := [][]byte{[]byte(key), []byte(hex.EncodeToString([]byte(key))),
		[]byte(base64.StdEncoding.EncodeToString([]byte(key))), []byte(base64.RawStdEncoding.EncodeToString([]byte(key)))}
	files := 0
	filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				t.Errorf("%s holds the API key", path)
			}
		}
		return nil
	})
	if files < 5 { // logs, and in each state directory the database and the secret
		t.Fatalf("scanned only %d files", files)
	}
}
