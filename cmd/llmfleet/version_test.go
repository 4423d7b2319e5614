package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestVersionFromLinker: a version set at link time (scripts/release.sh
// passes -ldflags "-X main.version=...") is the one "llmfleet version"
// prints, in place of the build info's "devel".
func TestVersionFromLinker(t *testing.T) {
	var out bytes.Buffer
	if err := runVersion(context.Background(), nil, &out, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "llmfleet devel") {
		t.Fatalf("without a link-time version: %q, want llmfleet devel...", out.String())
	}
	version = "v1.2.3-4-gabcdef0"
	t.Cleanup(func() { version = "" })
	out.Reset()
	if err := runVersion(context.Background(), nil, &out, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "llmfleet v1.2.3-4-gabcdef0 ") {
		t.Fatalf("with a link-time version: %q", out.String())
	}
}
