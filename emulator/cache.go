package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// Prompt caching (see the package documentation):
//
// The prompt is flattened into blocks in the order tools, system, messages
// (each tool, each system block, each message content block; a string
// content is one block). A block of n bytes of JSON costs ceil(n/4) tokens.
// A block carrying cache_control is a breakpoint; a top-level cache_control
// marks the last block. The prefix up to and including a breakpoint is
// identified by a chained hash of the model and its blocks. The cache
// itself, per API key and route, is package cachesim's.

// cacheLookback is how many block positions a breakpoint looks back for an
// entry written by an earlier request.
const cacheLookback = 20

// pblock is one block of the flattened prompt.
type pblock struct {
	tokens int64
	ttl    string // breakpoint TTL, "" if not a breakpoint
}

// flatPrompt is the flattened prompt of a request.
type flatPrompt struct {
	blocks []pblock
	cum    []int64  // cum[i] = tokens of blocks 0..i
	hash   []string // hash[i] = hash of the prefix 0..i
	total  int64
}

func blockTokens(raw []byte) int64 { return int64(len(raw)+3) / 4 }

// promptBlocks flattens p's prompt and checks its cache breakpoints.
func promptBlocks(p *params) (*flatPrompt, *apiError) {
	fp := &flatPrompt{}
	h := sha256.Sum256([]byte("model|" + p.model))
	add := func(kind string, raw json.RawMessage, cc *cacheControl) {
		hh := sha256.New()
		hh.Write(h[:])
		hh.Write([]byte(kind))
		hh.Write(cacheContent(raw, cc != nil))
		copy(h[:], hh.Sum(nil))
		b := pblock{tokens: blockTokens(raw)}
		if cc != nil {
			b.ttl = cc.TTL
		}
		fp.total += b.tokens
		fp.blocks = append(fp.blocks, b)
		fp.cum = append(fp.cum, fp.total)
		fp.hash = append(fp.hash, hex.EncodeToString(h[:16]))
	}
	for _, t := range p.tools {
		add("tool|", t.raw, blockCache(t.raw))
	}
	for _, s := range p.system {
		var cc *cacheControl
		if !p.systemString {
			cc = blockCache(s)
		}
		add("system|", s, cc)
	}
	for _, m := range p.messages {
		for _, b := range m.blocks {
			var cc *cacheControl
			if !m.text {
				cc = blockCache(b)
			}
			add(m.role+"|", b, cc)
		}
	}
	n := 0
	lastTTL := ""
	for _, b := range fp.blocks {
		if b.ttl == "" {
			continue
		}
		n++
		if b.ttl == "1h" && lastTTL == "5m" {
			return nil, invalid("cache_control: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block")
		}
		lastTTL = b.ttl
	}
	if p.cacheControl != nil && len(fp.blocks) > 0 {
		last := &fp.blocks[len(fp.blocks)-1]
		switch {
		case last.ttl == p.cacheControl.TTL:
		case last.ttl != "":
			return nil, invalid("cache_control: the last block already has a cache_control with a different ttl")
		case n >= 4:
			return nil, invalid("cache_control: A maximum of 4 blocks with cache_control may be provided, and automatic caching needs one")
		default:
			if p.cacheControl.TTL == "1h" && lastTTL == "5m" {
				return nil, invalid("cache_control: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block")
			}
			last.ttl = p.cacheControl.TTL
			n++
		}
	}
	if n > 4 {
		return nil, invalid("A maximum of 4 blocks with cache_control may be provided. Found %d.", n)
	}
	return fp, nil
}

// cacheContent returns what the cache keys a block by: the block without
// its cache_control (marked, when it has one), so that the prefix a turn
// cached is found by the next turn, which moves the breakpoint on to its
// own last block (as the API's multi-turn caching does).
func cacheContent(raw json.RawMessage, marked bool) []byte {
	if !marked {
		return raw
	}
	if plain, err := jsonmember.Delete(raw, "cache_control"); err == nil {
		return plain
	}
	return raw
}

// blockCache returns the cache_control of a block, if it has a valid one.
func blockCache(raw json.RawMessage) *cacheControl {
	var b struct {
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if json.Unmarshal(raw, &b) != nil || b.CacheControl == nil || isNull(b.CacheControl) {
		return nil
	}
	cc, e := parseCacheControl(b.CacheControl, "")
	if e != nil {
		return nil
	}
	return cc
}

func ttlDuration(ttl string) time.Duration {
	if ttl == "1h" {
		return time.Hour
	}
	return 5 * time.Minute
}

// useCache computes the input usage of a request with prompt fp, for the
// API key fingerprint key, processed on route at time now, through the
// prompt cache (package cachesim), drawing from r. Each breakpoint also
// reads the prefixes up to cacheLookback-1 blocks before it. The caller
// holds s.mu.
func (s *Server) useCache(key string, route cachesim.Route, fp *flatPrompt, now time.Time, r *rand.Rand) cachesim.Usage {
	l := cachesim.Lookup{Key: key, Route: route, Now: now, Prompt: llmfleet.Prompt{Tokens: fp.total}}
	for i, b := range fp.blocks {
		if b.ttl == "" {
			continue
		}
		l.Prompt.Breakpoints = append(l.Prompt.Breakpoints, llmfleet.Breakpoint{Hash: fp.hash[i], Tokens: fp.cum[i], TTL: ttlDuration(b.ttl)})
		var back []cachesim.Prefix
		for j := i - 1; j >= 0 && j > i-cacheLookback; j-- {
			back = append(back, cachesim.Prefix{Hash: fp.hash[j], Tokens: fp.cum[j]})
		}
		l.Lookback = append(l.Lookback, back)
	}
	return s.st.cache.Use(l, r)
}

// cacheConfig is the configuration of the Server's prompt cache: Cache,
// or cachesim.Default(), with CacheMinTokens when it is set.
func (s *Server) cacheConfig() cachesim.Config {
	cfg := cachesim.Default()
	if s.Cache != nil {
		cfg = *s.Cache
	}
	if s.CacheMinTokens != 0 {
		cfg.MinTokens = int64(s.CacheMinTokens)
	}
	return cfg
}
