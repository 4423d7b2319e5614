package sqlite

// HasLock reports whether Open takes the exclusive lock on this system.
const HasLock = hasLock
