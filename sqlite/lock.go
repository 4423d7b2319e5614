package sqlite

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/llmfleet/llmfleet"
)

// errHeld is what tryLock returns when another open file holds the lock.
var errHeld = errors.New("lock held")

// lockFile takes the exclusive lock of the database at path: a
// non-blocking flock(2) (LOCK_EX|LOCK_NB) on the sidecar file
// path+".lock", created 0600, into which it then writes the process id.
// The lock belongs to the returned open file: closing it, or the end of
// the process however it ends, releases it. As each open of the file is
// a lock of its own, a second DB in the same process is refused as well
// as another process. The file itself stays: removing it could let a
// newcomer lock a new file while an older opener locks the removed one.
//
// If the lock is held, lockFile returns an error wrapping
// llmfleet.ErrLocked that names the holder's pid, read from the file.
func lockFile(path string) (*os.File, error) {
	lp := path + ".lock"
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if errors.Is(err, errHeld) {
			return nil, lockedError(path, lp)
		}
		return nil, fmt.Errorf("sqlite: locking %s: %w", lp, err)
	}
	if err := writePID(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", lp, err)
	}
	return f, nil
}

// writePID replaces the content of f with the process id.
func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// lockedError is the error of Open for a database whose lock file lp is
// held by another. The holder writes its pid just after it takes the
// lock, so it may be missing for an instant.
func lockedError(path, lp string) error {
	b, _ := os.ReadFile(lp)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
		return fmt.Errorf("sqlite: %s is in use by another llmfleet (pid %d): %w", path, pid, llmfleet.ErrLocked)
	}
	return fmt.Errorf("sqlite: %s is in use by another llmfleet: %w", path, llmfleet.ErrLocked)
}
