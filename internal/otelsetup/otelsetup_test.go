package otelsetup

import (
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// TestFromEnv reads the standard variables: off without an endpoint,
// turned off by OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none, the
// protocol http/protobuf unless grpc is asked for, the service name
// llmfleet unless named, and clear errors for what llmfleet cannot do.
func TestFromEnv(t *testing.T) {
	const ep = "http://127.0.0.1:4318"
	tests := []struct {
		name    string
		env     map[string]string
		want    Settings
		wantErr string
	}{
		{name: "defaults, no endpoint", env: nil,
			want: Settings{Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep},
			want: Settings{Enabled: true, Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ep + "/v1/traces"},
			want: Settings{Enabled: true, Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: Settings{Enabled: true, Protocol: ProtocolGRPC, ServiceName: "llmfleet"}},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep,
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
			want: Settings{Enabled: true, Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_SDK_DISABLED": "true"},
			want: Settings{Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "disabled false", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_SDK_DISABLED": "false"},
			want: Settings{Enabled: true, Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "none"},
			want: Settings{Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "exporter otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "otlp"},
			want: Settings{Enabled: true, Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "exporter list", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "otlp, otlp"},
			want: Settings{Enabled: true, Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "exporter list with none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "otlp,none"},
			want: Settings{Protocol: ProtocolHTTP, ServiceName: "llmfleet"}},
		{name: "service name", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_SERVICE_NAME": "router-eu"},
			want: Settings{Enabled: true, Protocol: ProtocolHTTP, ServiceName: "router-eu"}},
		{name: "http/json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL="http/json"`},
		{name: "zipkin", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"},
			wantErr: `OTEL_TRACES_EXPORTER="zipkin"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestStartOff returns the no-op provider when tracing is off.
func TestStartOff(t *testing.T) {
	tp, shutdown, err := Start(context.Background(), Settings{Protocol: ProtocolHTTP})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tp.(noop.TracerProvider); !ok {
		t.Fatalf("provider %T, want the no-op one", tp)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// grpcReceiver is an OTLP/gRPC trace receiver keeping the names of the
// spans it gets.
type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (g *grpcReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g.names = append(g.names, s.Name)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestStartGRPC exports over OTLP/gRPC to a receiver on loopback when
// the protocol is grpc: the span is there once the provider is shut
// down.
func TestStartGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	rc := &grpcReceiver{}
	coltracepb.RegisterTraceServiceServer(gs, rc)
	go gs.Serve(ln)
	defer gs.Stop()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SDK_DISABLED",
		"OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	s, err := FromEnv(os.Getenv)
	if err != nil || !s.Enabled || s.Protocol != ProtocolGRPC {
		t.Fatalf("%+v %v", s, err)
	}
	tp, shutdown, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "over grpc")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.names) != 1 || rc.names[0] != "over grpc" {
		t.Fatalf("received %v", rc.names)
	}
}
