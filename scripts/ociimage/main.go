// Command ociimage builds llmfleet's container image without a Docker
// daemon and runs it, for CI (scripts/image.sh):
//
//	ociimage build -dockerfile Dockerfile -stage build=DIR -arch amd64 -tag llmfleet:v1 -oci dist/image [-tar dist/llmfleet-image.tar]
//	ociimage smoke -oci dist/image [-version v1]
//
// build carries out the final stage of the Dockerfile (FROM scratch, its
// COPY, ENV, USER, VOLUME, EXPOSE, HEALTHCHECK, STOPSIGNAL, ENTRYPOINT and
// CMD), its COPY --from=NAME reading the directory given as -stage
// NAME=DIR in place of that build stage, and writes an OCI image layout
// (and a tarball "docker load" takes). smoke extracts that image and runs
// it: its entrypoint with --version, then, as root, its default command
// chrooted as the image's user until its health check passes.
//
// It is a module of its own so that the library's go.mod does not list
// go-containerregistry.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ociimage build|smoke [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = runBuild(os.Args[2:])
	case "smoke":
		err = runSmoke(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

// stageFlags collects -stage NAME=DIR.
type stageFlags map[string]string

func (s stageFlags) String() string { return fmt.Sprint(map[string]string(s)) }

func (s stageFlags) Set(v string) error {
	k, dir, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want NAME=DIR")
	}
	s[k] = dir
	return nil
}

// runBuild is "ociimage build".
func runBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	dockerfile := fs.String("dockerfile", "Dockerfile", "the Dockerfile whose final stage to build")
	stages := stageFlags{}
	fs.Var(stages, "stage", "NAME=DIR: the directory standing for build stage NAME (repeatable)")
	arch := fs.String("arch", "amd64", "the image's architecture (linux)")
	tag := fs.String("tag", "llmfleet:devel", "the image's reference")
	ociDir := fs.String("oci", "", "OCI image layout directory to write (replaced)")
	tarFile := fs.String("tar", "", "tarball for docker load to write, if given")
	fs.Parse(args)
	epoch, _ := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
	f, err := os.Open(*dockerfile)
	if err != nil {
		return err
	}
	st, err := parseFinalStage(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %v", *dockerfile, err)
	}
	img, err := buildImage(st, stages, *arch, time.Unix(epoch, 0).UTC())
	if err != nil {
		return err
	}
	ref, err := name.NewTag(*tag)
	if err != nil {
		return err
	}
	if *ociDir == "" {
		return fmt.Errorf("-oci is required")
	}
	os.RemoveAll(*ociDir)
	p, err := layout.Write(*ociDir, empty.Index)
	if err != nil {
		return err
	}
	ann := map[string]string{"org.opencontainers.image.ref.name": ref.TagStr()}
	if err := p.AppendImage(img, layout.WithAnnotations(ann)); err != nil {
		return err
	}
	if *tarFile != "" {
		if err := tarball.WriteToFile(*tarFile, ref, img); err != nil {
			return err
		}
	}
	d, err := img.Digest()
	fmt.Printf("ociimage: %s %s in %s\n", ref, d, *ociDir)
	return err
}

// runSmoke is "ociimage smoke".
func runSmoke(args []string) error {
	fs := flag.NewFlagSet("smoke", flag.ExitOnError)
	ociDir := fs.String("oci", "", "OCI image layout directory holding one image")
	version := fs.String("version", "", "the version --version must print")
	fs.Parse(args)
	img, err := readLayout(*ociDir)
	if err != nil {
		return err
	}
	return smoke(img, *version)
}
