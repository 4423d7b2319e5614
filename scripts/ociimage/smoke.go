package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// smoke extracts img and runs it as a container runtime would: its
// entrypoint with --version, which must print wantVersion; then (as
// root) its default command, until its HEALTHCHECK passes, its volumes
// hold files of the image's user, and its STOPSIGNAL stops it cleanly.
func smoke(img v1.Image, wantVersion string) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "ociimage-rootfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	// The image's / as a runtime makes it: open to the image's user.
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	if err := extract(img, root); err != nil {
		return err
	}
	c := container{Root: root, Config: cf.Config}
	var out bytes.Buffer
	cmd, err := c.entrypoint([]string{"--version"}, nil, &out, os.Stderr)
	if err == nil {
		err = cmd.Run()
	}
	if err != nil {
		return fmt.Errorf("entrypoint --version: %v", err)
	}
	fmt.Printf("ociimage: entrypoint --version: %s", out.String())
	if want := "llmfleet " + wantVersion + " "; wantVersion != "" && !strings.HasPrefix(out.String(), want) {
		return fmt.Errorf("entrypoint --version printed %q, want %q...", out.String(), want)
	}
	if os.Geteuid() != 0 {
		fmt.Println("ociimage: not root: no chroot, the default command is not run")
		return nil
	}
	return c.serveCheck()
}

// serveCheck runs the image's default command until its health check
// passes, checks its volumes, and stops it with its stop signal.
func (c container) serveCheck() error {
	var logs bytes.Buffer
	cmd, err := c.entrypoint(nil, nil, &logs, &logs)
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	fail := func(err error) error {
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("%v\nits output:\n%s", err, logs.String())
	}
	if err := c.waitHealthy(done); err != nil {
		return fail(err)
	}
	fmt.Printf("ociimage: %s: healthy\n", strings.Join(cmd.Args, " "))
	if err := c.checkVolumes(); err != nil {
		return fail(err)
	}
	if err := cmd.Process.Signal(stopSignal(c.Config.StopSignal)); err != nil {
		return fail(err)
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("after %s: %v\nits output:\n%s", c.Config.StopSignal, err, logs.String())
		}
	case <-time.After(90 * time.Second):
		return fail(fmt.Errorf("still running 90s after %s", c.Config.StopSignal))
	}
	fmt.Printf("ociimage: stopped cleanly by %s\n", stopSignal(c.Config.StopSignal))
	return nil
}

// waitHealthy runs the HEALTHCHECK command until it passes, for at most
// the start period plus its retries (at least a minute: a cold machine).
func (c container) waitHealthy(exited <-chan error) error {
	hc := c.Config.Healthcheck
	if hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" {
		return fmt.Errorf("the image has no HEALTHCHECK CMD")
	}
	limit := max(hc.StartPeriod+time.Duration(hc.Retries)*hc.Interval, time.Minute)
	deadline := time.Now().Add(limit)
	for {
		var out bytes.Buffer
		err := c.probe(hc, &out)
		if err == nil {
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("exited before healthy: %v", werr)
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy after %v: %v: %s", limit, err, out.String())
		}
	}
}

// probe runs the health check's command once, within its timeout.
func (c container) probe(hc *v1.HealthConfig, out *bytes.Buffer) error {
	timeout := hc.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, err := c.command(hc.Test[1:], nil, out, out)
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stop()
	return cmd.Wait()
}

// checkVolumes checks that each volume holds files now, each owned by
// the image's user: the default command could write its state there.
func (c container) checkVolumes() error {
	uid, _, err := numericUser(c.Config.User)
	if err != nil {
		return err
	}
	for vol := range c.Config.Volumes {
		entries, err := os.ReadDir(filepath.Join(c.Root, vol))
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			return fmt.Errorf("volume %s: empty", vol)
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				return err
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid != uid {
				return fmt.Errorf("volume %s: %s owned by uid %d, not the image's %d", vol, e.Name(), st.Uid, uid)
			}
			fmt.Printf("ociimage: volume %s: %s (uid %d)\n", vol, e.Name(), uid)
		}
	}
	return nil
}

// stopSignal is the signal of STOPSIGNAL (SIGTERM by default).
func stopSignal(name string) syscall.Signal {
	switch strings.TrimPrefix(strings.ToUpper(name), "SIG") {
	case "INT":
		return syscall.SIGINT
	case "QUIT":
		return syscall.SIGQUIT
	case "KILL":
		return syscall.SIGKILL
	}
	return syscall.SIGTERM
}
