package proxy

import (
	"testing"

	"github.com/llmfleet/llmfleet"
)

// TestFacesSayEveryRefusal: every face words every refusal kind the
// pipeline and the owner gate give, with an error status and a message.
func TestFacesSayEveryRefusal(t *testing.T) {
	s := &Server{}
	for name, f := range map[string]face{"anthropic": anthropicFace{s: s}, "openai": openAIFace{s: s}} {
		for k := stateFailed; k <= notShared; k++ {
			e := f.says(k, "x")
			if e == nil || e.status < 400 || e.typ == "" || e.msg == "" {
				t.Errorf("%s: kind %d: %+v", name, k, e)
			}
		}
	}
}

// TestRouteNames: the llmfleet-route refusal names a face's routes.
func TestRouteNames(t *testing.T) {
	for _, c := range []struct {
		routes []llmfleet.Route
		want   string
	}{
		{[]llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteBatch}, "sync or batch"},
		{[]llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteFlex, llmfleet.RouteBatch}, "sync, flex or batch"},
		{[]llmfleet.Route{llmfleet.RouteSync}, "sync"},
	} {
		if got := routeNames(c.routes); got != c.want {
			t.Errorf("routeNames(%v) = %q, want %q", c.routes, got, c.want)
		}
	}
}
