package serve

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// TestAccessLineText: the access lines written straight to the log's
// writer (Config.AccessText) are, byte for byte, those the slog text
// handler writes: at both levels, for every field present or not, and
// strings that need quoting or not.
func TestAccessLineText(t *testing.T) {
	odd := []string{"", "plain", "with space", "a=b", `q"uote`, `back\slash`, "tab\there", "nl\n", "del\x7f",
		"\x00", "\x1f", "é", "non\u00a0breaking", "zero\u200bwidth", "bad\xffutf8", "emoji😀", "/budget/500/v1/messages",
		"claude-haiku-4-5", "req_01ABC", "lfk_3f2a", "\u2028"}
	for c := 0; c < 128; c++ {
		odd = append(odd, "x"+string(rune(c))+"y")
	}
	at := time.Date(2026, 11, 27, 1, 2, 3, 456789012, time.FixedZone("X", 5400))
	var recs []proxy.Access
	for i, s := range odd {
		recs = append(recs,
			proxy.Access{Method: "POST", Path: s, Status: 200 + i, Latency: time.Duration(i) * 1234567 * time.Nanosecond},
			proxy.Access{Method: s, Path: "/v1/messages", Messages: true, Route: llmfleet.Route(s), Model: s, Status: 503,
				Latency: 3 * time.Second, Budget: time.Duration(i) * time.Minute, RequestID: s, Key: s})
	}
	recs = append(recs, proxy.Access{Method: "GET", Path: "/", Messages: true, Key: "k", Latency: -time.Millisecond})
	var viaSlog, direct bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&viaSlog, &slog.HandlerOptions{Level: slog.LevelInfo}))
	slowLog := newAccessLog(logger, false, nil)
	fastLog := newAccessLog(logger, false, &direct)
	for i, a := range recs {
		for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
			line := accessLine{a: a, at: at.Add(time.Duration(i) * 777 * time.Microsecond), level: level}
			slowLog.write(line)
			fastLog.write(line)
		}
	}
	_ = slowLog.close(context.Background())
	_ = fastLog.close(context.Background())
	want, got := bytes.Split(viaSlog.Bytes(), []byte("\n")), bytes.Split(direct.Bytes(), []byte("\n"))
	if len(got) != len(want) {
		t.Fatalf("%d lines written directly, %d by slog", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// BenchmarkAccessLine measures the writing of one access line, through
// the slog text handler and straight to its writer.
func BenchmarkAccessLine(b *testing.B) {
	line := accessLine{a: proxy.Access{Method: "POST", Path: "/v1/messages", Messages: true, Route: llmfleet.RouteSync,
		Model: "claude-haiku-4-5", Status: 200, Latency: 1234567 * time.Nanosecond, RequestID: "req_011CX5J9aBcDeFgHiJkLmN",
		Key: "lfk_3f2a9c"}, at: time.Now(), level: slog.LevelInfo}
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, bc := range []struct {
		name string
		text io.Writer
	}{{"slog", nil}, {"direct", io.Discard}} {
		b.Run(bc.name, func(b *testing.B) {
			l := newAccessLog(logger, false, bc.text)
			b.ReportAllocs()
			for b.Loop() {
				l.write(line)
			}
		})
	}
}
