package vault

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Open returns a Vault under the secret in the file at path. On first
// start, when there is no such file, it creates one with SecretSize random
// bytes, hex-encoded, mode 0600, in a directory created 0700 if missing;
// the file appears whole or not at all. An existing file must hold
// SecretSize bytes, raw or as hex (so an operator can make one with
// `openssl rand -hex 32`), and must not be readable or writable by group
// or others, else Open refuses it.
func Open(path string) (*Vault, error) {
	secret, err := load(path)
	if errors.Is(err, fs.ErrNotExist) {
		secret, err = create(path)
	}
	if err != nil {
		return nil, err
	}
	defer clear(secret)
	return New(secret)
}

// load reads the secret file, checking its permissions first.
func load(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("vault: secret file %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("vault: secret file %s has mode %v; refusing a secret that group or others can access (chmod 600 it)", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, 4*SecretSize))
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	defer clear(b)
	if len(b) == SecretSize {
		return bytes.Clone(b), nil
	}
	text := bytes.TrimSpace(b)
	if len(text) == 2*SecretSize {
		secret := make([]byte, SecretSize)
		if _, err := hex.Decode(secret, text); err == nil {
			return secret, nil
		}
	}
	return nil, fmt.Errorf("vault: secret file %s holds neither %d bytes nor %d hex digits", path, SecretSize, 2*SecretSize)
}

// create makes a new secret file atomically: written and synced under a
// temporary name, then linked to path, which fails if another process
// created it meanwhile; that one is then used.
func create(path string) ([]byte, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	secret := make([]byte, SecretSize)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	text := []byte(hex.EncodeToString(secret) + "\n")
	defer clear(text)
	tmp, err := os.CreateTemp(dir, ".secret-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(text)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("vault: writing %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return load(path)
		}
		return nil, fmt.Errorf("vault: creating %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil { // make the new name durable
		d.Sync()
		d.Close()
	}
	return secret, nil
}
