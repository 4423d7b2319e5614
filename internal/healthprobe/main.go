// Command healthprobe is the container image's HEALTHCHECK: it asks a URL
// (by default llmfleet serve's readiness endpoint on the image's port,
// http://127.0.0.1:8787/readyz) and exits 0 on a 200 answer, 1 otherwise.
// The image has no shell and no curl; this static binary stands in.
//
//	healthprobe [URL]
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// defaultURL is serve's readiness endpoint on the port the image exposes.
const defaultURL = "http://127.0.0.1:8787/readyz"

func main() {
	url := defaultURL
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := probe(ctx, http.DefaultClient, url); err != nil {
		fmt.Fprintln(os.Stderr, "healthprobe:", err)
		os.Exit(1)
	}
}

// probe asks url with GET and returns nil if it answers 200.
func probe(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", url, resp.Status, body)
	}
	return nil
}
