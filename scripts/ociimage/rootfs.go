package main

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// readLayout returns the one image of the OCI layout at dir.
func readLayout(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s: %d manifests, want 1", dir, len(m.Manifests))
	}
	return idx.Image(m.Manifests[0].Digest)
}

// extract writes the flattened file system of img under root, owners
// included when run as root.
func extract(img v1.Image, root string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(root, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(root)+string(filepath.Separator)) {
			return fmt.Errorf("%s: outside the root", h.Name)
		}
		if err := extractEntry(h, tr, name); err != nil {
			return err
		}
	}
}

// extractEntry writes one directory or regular file of a layer.
func extractEntry(h *tar.Header, r io.Reader, name string) error {
	mode := os.FileMode(h.Mode).Perm()
	if h.Mode&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(name, 0o755); err != nil {
			return err
		}
	case tar.TypeReg:
		f, err := os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: entry type %c not expected", h.Name, h.Typeflag)
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(name, h.Uid, h.Gid); err != nil {
			return err
		}
	}
	return os.Chmod(name, mode)
}
