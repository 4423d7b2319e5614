package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// buildImage makes the OCI image of a final stage for linux/arch: one
// layer per COPY, read from the directories that stand for the build
// stages (stages maps a stage name to its root), every file dated mtime.
func buildImage(st finalStage, stages map[string]string, arch string, mtime time.Time) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, op := range st.Copies {
		root, ok := stages[op.From]
		if !ok {
			return nil, fmt.Errorf("COPY --from=%s: no -stage %s=DIR given", op.From, op.From)
		}
		data, err := copyLayer(op, root, mtime)
		if err != nil {
			return nil, err
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, err
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: mtime}
	cf.Config = st.Config
	return mutate.ConfigFile(img, cf)
}

// layerWriter writes the entries of one layer, each directory once.
type layerWriter struct {
	tw    *tar.Writer
	mtime time.Time
	dirs  map[string]bool
}

// copyLayer is the uncompressed tar of one COPY: the parents of its
// destination (root's, 0755), then each source, a directory's contents
// below the destination.
func copyLayer(op copyOp, root string, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	lw := &layerWriter{tw: tar.NewWriter(&buf), mtime: mtime, dirs: map[string]bool{}}
	for _, src := range op.Sources {
		local := filepath.Join(root, filepath.FromSlash(src))
		info, err := os.Stat(local)
		if err != nil {
			return nil, fmt.Errorf("COPY %s: %v", src, err)
		}
		dest := strings.TrimSuffix(op.Dest, "/")
		if !info.IsDir() && strings.HasSuffix(op.Dest, "/") {
			dest = path.Join(dest, path.Base(src))
		}
		lw.parents(dest)
		if err := lw.tree(local, dest, op.UID, op.GID); err != nil {
			return nil, err
		}
	}
	if err := lw.tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parents writes the directories above dest not written yet.
func (lw *layerWriter) parents(dest string) {
	dir := path.Dir(dest)
	if dir == "/" || lw.dirs[dir] {
		return
	}
	lw.parents(dir)
	lw.dirs[dir] = true
	lw.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755, ModTime: lw.mtime})
}

// tree writes the file or directory tree local as dest, owned by uid:gid
// (root for -1), in name order, with the local modes.
func (lw *layerWriter) tree(local, dest string, uid, gid int) error {
	uid, gid = max(uid, 0), max(gid, 0)
	var names []string
	err := filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		names = append(names, p)
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, p := range names {
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(local, p)
		name := strings.TrimPrefix(path.Join(dest, filepath.ToSlash(rel)), "/")
		h := &tar.Header{Name: name, Mode: int64(info.Mode().Perm()), ModTime: lw.mtime, Uid: uid, Gid: gid}
		if info.Mode()&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		if err := lw.entry(h, p, info); err != nil {
			return err
		}
	}
	return nil
}

// entry writes one file or directory.
func (lw *layerWriter) entry(h *tar.Header, local string, info fs.FileInfo) error {
	switch {
	case info.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		lw.dirs["/"+strings.TrimSuffix(h.Name, "/")] = true
		return lw.tw.WriteHeader(h)
	case info.Mode().IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
		if err := lw.tw.WriteHeader(h); err != nil {
			return err
		}
		f, err := os.Open(local)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(lw.tw, f)
		return err
	}
	return fmt.Errorf("%s: only files and directories can be copied", local)
}
