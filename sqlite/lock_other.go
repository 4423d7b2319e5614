//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package sqlite

import "os"

// hasLock reports whether this system's Open takes the exclusive lock.
const hasLock = false

// tryLock does nothing on a system without flock(2): there Open takes no
// exclusive lock, and only writes its pid to the lock file.
func tryLock(*os.File) error { return nil }
