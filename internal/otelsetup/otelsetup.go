// Package otelsetup reads the standard OpenTelemetry environment
// variables and, when they ask for it, makes the tracer provider of
// "llmfleet serve": spans exported over OTLP (http/protobuf by default,
// or grpc) through a batching span processor. It holds no global state:
// the provider it returns is handed to the proxy and the dispatcher
// through their configurations, and shut down (its last spans flushed)
// by the command when it stops.
package otelsetup

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// DefaultServiceName is the service.name of llmfleet's spans when
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) names
// none.
const DefaultServiceName = "llmfleet"

// The protocols of OTEL_EXPORTER_OTLP_PROTOCOL that llmfleet exports with.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Settings is what the environment asks of tracing.
type Settings struct {
	// Enabled says whether spans are exported: an OTLP endpoint is set
	// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
	// and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none
	// turns tracing off.
	Enabled bool
	// Protocol is ProtocolHTTP or ProtocolGRPC
	// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
	// OTEL_EXPORTER_OTLP_PROTOCOL; default ProtocolHTTP).
	Protocol string
	// ServiceName is OTEL_SERVICE_NAME, else DefaultServiceName.
	ServiceName string
}

// FromEnv reads the settings from the environment through getenv
// (os.Getenv). A value llmfleet cannot honour (an exporter other than
// otlp or none, a protocol other than http/protobuf or grpc) is an error
// naming the variable, whether or not an endpoint is set.
func FromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{Protocol: ProtocolHTTP, ServiceName: DefaultServiceName}
	if v := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); v != "" {
		s.ServiceName = v
	}
	name, proto := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if proto == "" {
		name, proto = "OTEL_EXPORTER_OTLP_PROTOCOL", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch proto {
	case "", ProtocolHTTP:
	case ProtocolGRPC:
		s.Protocol = ProtocolGRPC
	default:
		return s, fmt.Errorf("%s=%q: llmfleet exports traces over %s or %s", name, proto, ProtocolHTTP, ProtocolGRPC)
	}
	disabled := strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true")
	// A comma-separated list, as the specification allows.
	for exp := range strings.SplitSeq(strings.ToLower(getenv("OTEL_TRACES_EXPORTER")), ",") {
		switch exp = strings.TrimSpace(exp); exp {
		case "", "otlp":
		case "none":
			disabled = true
		default:
			return s, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: llmfleet exports traces with otlp, or none", exp)
		}
	}
	endpoint := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != "" ||
		strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) != ""
	s.Enabled = endpoint && !disabled
	return s, nil
}

// Start returns the tracer provider the settings ask for, and the
// function that shuts it down, exporting the spans still pending until
// its context ends. Tracing off, it returns a no-op provider and a
// shutdown that does nothing. The exporter reads the rest of the OTLP
// variables itself (the endpoints, OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _INSECURE, the certificates), the provider OTEL_TRACES_SAMPLER and the
// OTEL_BSP_ variables; the resource OTEL_RESOURCE_ATTRIBUTES.
func Start(ctx context.Context, s Settings) (trace.TracerProvider, func(context.Context) error, error) {
	if !s.Enabled {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	var exp sdktrace.SpanExporter
	var err error
	if s.Protocol == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter (%s): %w", s.Protocol, err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// over the default name.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", s.ServiceName)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, nil, fmt.Errorf("tracing resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}
