//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// hasLock reports whether this system's Open takes the exclusive lock.
const hasLock = true

// tryLock takes an exclusive flock(2) on f without waiting: errHeld if
// another open file holds one.
func tryLock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	err = rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(lerr, syscall.EINTR) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	if errors.Is(lerr, syscall.EWOULDBLOCK) {
		return errHeld
	}
	return lerr
}
