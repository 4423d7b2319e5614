package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultPath returns the database file used when none is given:
// llmfleet/llmfleet.db in the user's data directory, which is
// $XDG_DATA_HOME when it is set to an absolute path and ~/.local/share
// otherwise. It creates the llmfleet directory, 0700, when missing.
func DefaultPath() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("sqlite: no data directory: %w", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	dir := filepath.Join(base, "llmfleet")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("sqlite: %w", err)
	}
	return filepath.Join(dir, "llmfleet.db"), nil
}
