package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/internal/envflag"
)

// llmfleetBinary returns the llmfleet binary to run: flagValue if given,
// else "llmfleet" beside this command's executable, else on $PATH.
func llmfleetBinary(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "llmfleet")
		if fi, err := os.Stat(beside); err == nil && !fi.IsDir() {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("llmfleet"); err == nil {
		return p, nil
	}
	return "", errors.New(`no llmfleet binary: give --llmfleet, or build it beside this command (go build -o bin/ ./cmd/llmfleet ./cmd/llmfleet-bench)`)
}

// freeAddr returns a loopback address no one listens on just now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startProc starts bin with args and the environment env (nil: the
// benchmark's children's, envflag.ChildEnv), its output to a log file in
// dir. Cancelling ctx interrupts it.
func startProc(ctx context.Context, dir, name string, env []string, bin string, args ...string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	if env == nil {
		cmd.Env = envflag.ChildEnv()
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	return cmd, nil
}

// waitUp waits until url answers through client: 200, or any status when
// anyStatus is set (a server without a readiness path).
func waitUp(ctx context.Context, client *http.Client, url string, anyStatus bool) error {
	last := "no answer"
	for range 400 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if anyStatus || resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not come up (last: %s)", url, last)
}

// clockTicks is the unit of the CPU times in /proc/PID/stat (USER_HZ,
// 100 on every Linux configuration Go supports).
const clockTicks = 100

// procCPU returns the CPU time, user and system, process pid has spent
// so far (Linux: /proc/PID/stat).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields counted from the last ')' are 3 (state) onwards.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}
