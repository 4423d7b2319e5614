package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/storetest"
)

// open opens a store at path, closed when the test ends.
func open(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	d := &sqlite.DB{Path: path}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

func TestStore(t *testing.T) {
	h := storetest.Harness{
		New: func(t *testing.T) llmfleet.Store {
			return open(t, filepath.Join(t.TempDir(), "llmfleet.db"))
		},
		Reopen: func(t *testing.T, old llmfleet.Store) llmfleet.Store {
			d := old.(*sqlite.DB)
			if err := d.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return open(t, d.Path)
		},
	}
	if sqlite.HasLock {
		h.Second = func(t *testing.T, first llmfleet.Store) error {
			d := &sqlite.DB{Path: first.(*sqlite.DB).Path}
			err := d.Open(t.Context())
			if err == nil {
				d.Close()
			}
			return err
		}
	}
	storetest.Run(t, h)
}

func TestFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "llmfleet.db")
	d := open(t, path)
	if err := d.PutCredential(t.Context(), "cred_a", []byte("sealed")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, path, path + "-wal", path + "-shm", path + ".lock"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want no access for group or others", p, fi.Mode().Perm())
		}
	}
}

func TestSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llmfleet.db")
	d := open(t, path)
	v, err := d.SchemaVersion(t.Context())
	if err != nil || v < 1 {
		t.Fatalf("SchemaVersion = %d, %v", v, err)
	}
	d.Close()

	// A database from a newer llmfleet is refused, not migrated.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA user_version = " + strconv.Itoa(v+1)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	newer := &sqlite.DB{Path: path}
	if err := newer.Open(context.Background()); err == nil {
		newer.Close()
		t.Fatal("Open of a database with a newer schema: no error")
	}
}

func TestClosed(t *testing.T) {
	d := open(t, filepath.Join(t.TempDir(), "llmfleet.db"))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := d.AddRequest(t.Context(), &llmfleet.StoredRequest{ID: "lfr_1"}); err == nil {
		t.Error("AddRequest after Close: no error")
	}
	if err := d.PutCredential(t.Context(), "cred_a", []byte("x")); err == nil {
		t.Error("PutCredential after Close: no error")
	}
}

func TestDefaultPath(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	p, err := sqlite.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(data, "llmfleet", "llmfleet.db"); p != want {
		t.Errorf("DefaultPath = %s, want %s", p, want)
	}
	fi, err := os.Stat(filepath.Dir(p))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory: %v, %v; want a 0700 directory", fi, err)
	}

	home := t.TempDir()
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", home)
	p, err = sqlite.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".local", "share", "llmfleet", "llmfleet.db"); p != want {
		t.Errorf("DefaultPath without XDG_DATA_HOME = %s, want %s", p, want)
	}
}

func TestNotOpened(t *testing.T) {
	var d sqlite.DB
	if err := d.AddRequest(t.Context(), &llmfleet.StoredRequest{ID: "lfr_1"}); err == nil {
		t.Error("AddRequest before Open: no error")
	}
	if _, err := d.GetRequest(t.Context(), "lfr_1"); err == nil {
		t.Error("GetRequest before Open: no error")
	}
	if _, _, err := d.Pending(t.Context()); err == nil {
		t.Error("Pending before Open: no error")
	}
	if err := d.ResolveBatch(t.Context(), "lfb_1"); err == nil {
		t.Error("ResolveBatch before Open: no error")
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close before Open: %v", err)
	}
}
