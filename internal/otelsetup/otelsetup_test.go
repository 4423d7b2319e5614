package otelsetup

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"
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
