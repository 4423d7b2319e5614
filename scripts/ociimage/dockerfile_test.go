package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRepositoryDockerfile: the repository's Dockerfile reads into the
// image config the docs promise (non-root user, /data volume, port 8787,
// the health check on /readyz, the binary as entrypoint).
func TestRepositoryDockerfile(t *testing.T) {
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := parseFinalStage(f)
	if err != nil {
		t.Fatal(err)
	}
	c := st.Config
	if c.User != "65532:65532" {
		t.Errorf("USER %q", c.User)
	}
	if _, ok := c.Volumes["/data"]; !ok || len(c.Volumes) != 1 {
		t.Errorf("VOLUME %v", c.Volumes)
	}
	if _, ok := c.ExposedPorts["8787/tcp"]; !ok {
		t.Errorf("EXPOSE %v", c.ExposedPorts)
	}
	if !reflect.DeepEqual(c.Entrypoint, []string{"/usr/local/bin/llmfleet"}) || !reflect.DeepEqual(c.Cmd, []string{"serve"}) {
		t.Errorf("ENTRYPOINT %q CMD %q", c.Entrypoint, c.Cmd)
	}
	hc := c.Healthcheck
	if hc == nil || !strings.HasSuffix(hc.Test[len(hc.Test)-1], ":8787/readyz") || hc.Test[0] != "CMD" {
		t.Errorf("HEALTHCHECK %+v", hc)
	}
	if !reflect.DeepEqual(c.Env, []string{"LLMFLEET_LISTEN=0.0.0.0:8787", "LLMFLEET_DB=/data/llmfleet.db"}) {
		t.Errorf("ENV %q", c.Env)
	}
}

// TestParseFinalStage reads a made-up Dockerfile: only the last stage
// counts, continued lines join, and what this builder cannot carry out
// is an error rather than a silent difference.
func TestParseFinalStage(t *testing.T) {
	const df = `# syntax=docker/dockerfile:1
ARG X=1
FROM golang AS build
RUN make
FROM scratch
COPY --from=build --chown=7:8 /a /b /opt/
ENV A=1 B="two"
HEALTHCHECK --interval=10s --retries=2 \
	# a comment inside
	CMD ["/p", "x"]
EXPOSE 80 53/udp
ENTRYPOINT ["/e"]
`
	st, err := parseFinalStage(strings.NewReader(df))
	if err != nil {
		t.Fatal(err)
	}
	want := copyOp{From: "build", Sources: []string{"/a", "/b"}, Dest: "/opt/", UID: 7, GID: 8}
	if len(st.Copies) != 1 || !reflect.DeepEqual(st.Copies[0], want) {
		t.Errorf("COPY %+v", st.Copies)
	}
	if !reflect.DeepEqual(st.Config.Env, []string{"A=1", "B=two"}) {
		t.Errorf("ENV %q", st.Config.Env)
	}
	hc := st.Config.Healthcheck
	if hc.Interval != 10*time.Second || hc.Retries != 2 || !reflect.DeepEqual(hc.Test, []string{"CMD", "/p", "x"}) {
		t.Errorf("HEALTHCHECK %+v", hc)
	}
	if len(st.Config.ExposedPorts) != 2 {
		t.Errorf("EXPOSE %v", st.Config.ExposedPorts)
	}
	for _, bad := range []string{
		"FROM alpine\n",
		"FROM scratch\nRUN true\n",
		"FROM scratch\nENTRYPOINT /e\n",
		"FROM scratch\nCOPY /a /b\n",
		"FROM scratch\nCOPY --from=b --chown=app /a /b\n",
		"FROM scratch\nHEALTHCHECK --start-interval=1s CMD [\"/p\"]\n",
	} {
		if _, err := parseFinalStage(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
