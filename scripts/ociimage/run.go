package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// defaultPath is the PATH a container runtime gives an image whose
// config sets none.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// container runs commands of an image extracted under Root as its
// config says: chrooted, as its user, with its environment and working
// directory. Without root it runs the binaries under Root unconfined
// (enough for --version, not for serve's /data).
type container struct {
	Root   string
	Config v1.Config
}

// command is the process of args (a path in the image and its
// arguments) in the container, with extra environment appended.
func (c container) command(args []string, extra []string, stdout, stderr io.Writer) (*exec.Cmd, error) {
	env := append([]string{}, c.Config.Env...)
	if !hasKey(env, "PATH") {
		env = append(env, defaultPath)
	}
	if !hasKey(env, "HOME") {
		env = append(env, "HOME=/")
	}
	cmd := &exec.Cmd{Path: args[0], Args: args, Env: append(env, extra...), Stdout: stdout, Stderr: stderr, Dir: "/"}
	if c.Config.WorkingDir != "" {
		cmd.Dir = c.Config.WorkingDir
	}
	if os.Geteuid() != 0 {
		cmd.Path, cmd.Dir = filepath.Join(c.Root, args[0]), c.Root
		return cmd, nil
	}
	uid, gid, err := numericUser(c.Config.User)
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     c.Root,
		Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		Setpgid:    true,
	}
	return cmd, nil
}

// entrypoint is the process of the image's ENTRYPOINT with args (the
// image's CMD when args is nil).
func (c container) entrypoint(args []string, extra []string, stdout, stderr io.Writer) (*exec.Cmd, error) {
	if args == nil {
		args = c.Config.Cmd
	}
	if len(c.Config.Entrypoint) == 0 {
		return nil, fmt.Errorf("the image has no ENTRYPOINT")
	}
	return c.command(append(append([]string{}, c.Config.Entrypoint...), args...), extra, stdout, stderr)
}

// numericUser reads USER uid[:gid] (the image has no /etc/passwd).
func numericUser(user string) (uid, gid uint32, err error) {
	if user == "" {
		return 0, 0, nil
	}
	u, g, ok := strings.Cut(user, ":")
	if !ok {
		g = u
	}
	un, e1 := strconv.ParseUint(u, 10, 32)
	gn, e2 := strconv.ParseUint(g, 10, 32)
	if e1 != nil || e2 != nil {
		return 0, 0, fmt.Errorf("USER %q: numeric ids only", user)
	}
	return uint32(un), uint32(gn), nil
}

// hasKey reports whether env sets key.
func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}
