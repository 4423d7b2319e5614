package main

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// freePort returns a loopback port free when asked.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// scripts/demo.sh, run as CI would (not from a terminal): its headline
// says what batching saved on the patient traffic (half the price) beside
// both runs together, and it names no dashboard, which is gone once it
// has exited.
func TestDemoScript(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	if testing.Short() {
		t.Skip("builds llmfleet and runs the demo")
	}
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	cmd := exec.Command("bash", "../../scripts/demo.sh")
	cmd.Env = append(os.Environ(), "DEMO_KEEP=0", "DEMO_AGENTS=3", "DEMO_TURNAROUND=100ms",
		"EMULATOR_PORT="+freePort(t), "SERVE_PORT="+freePort(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"batching, on the patient traffic (budget 10m): saved  50%: paid $",
		"on all the traffic (patient + tight):        saved  25%: paid $",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "dashboard:") {
		t.Errorf("the demo names a dashboard it does not keep:\n%s", text)
	}
}
