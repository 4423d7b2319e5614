package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Prompt caching, simplified (see the package documentation):
//
// The prompt is flattened into blocks in the order tools, system, messages
// (each tool, each system block, each message content block; a string
// content is one block). A block of n bytes of JSON costs ceil(n/4) tokens.
// A block carrying cache_control is a breakpoint; a top-level cache_control
// marks the last block. The prefix up to and including a breakpoint is
// identified by a chained hash of the model and its blocks, and cached per
// API key with the breakpoint's TTL.

// cacheLookback is how many block positions a breakpoint looks back for an
// entry written by an earlier request.
const cacheLookback = 20

// pblock is one block of the flattened prompt.
type pblock struct {
	tokens int64
	ttl    string // breakpoint TTL, "" if not a breakpoint
}

// cacheEntry is one cached prefix.
type cacheEntry struct {
	expires time.Time
	ttl     time.Duration
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
		hh.Write(raw)
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

// inputUsage is the input side of a request's usage.
type inputUsage struct {
	input, cacheRead, write5m, write1h int64
}

// useCache computes the input usage of a request with prompt fp for the API
// key fingerprint key at time now, reading and writing the cache. The caller
// holds s.mu.
func (s *Server) useCache(key string, fp *flatPrompt, now time.Time) inputUsage {
	st := s.st
	prefix := key + "|"
	hit := -1 // highest block position with a live cache entry
	last := -1
	for i, b := range fp.blocks {
		if b.ttl == "" || fp.cum[i] < int64(s.CacheMinTokens) {
			continue
		}
		last = i
		for j := i; j >= 0 && j > i-cacheLookback; j-- {
			if e, ok := st.cache[prefix+fp.hash[j]]; ok && e.expires.After(now) {
				if j > hit {
					hit = j
				}
				break
			}
		}
	}
	var u inputUsage
	covered := int64(0)
	if hit >= 0 {
		e := st.cache[prefix+fp.hash[hit]]
		e.expires = now.Add(e.ttl) // a hit refreshes the TTL
		st.cache[prefix+fp.hash[hit]] = e
		u.cacheRead = fp.cum[hit]
		covered = u.cacheRead
	}
	if last > hit {
		// Billing points: B = the last 1h breakpoint after the hit, C =
		// the last breakpoint. 1h writes cover hit..B, 5m writes B..C.
		b := -1
		for i := hit + 1; i <= last; i++ {
			bl := fp.blocks[i]
			if bl.ttl == "" || fp.cum[i] < int64(s.CacheMinTokens) {
				continue
			}
			d := ttlDuration(bl.ttl)
			st.cache[prefix+fp.hash[i]] = cacheEntry{expires: now.Add(d), ttl: d}
			if bl.ttl == "1h" {
				b = i
			}
		}
		from := covered
		if b >= 0 {
			u.write1h = fp.cum[b] - covered
			from = fp.cum[b]
		}
		u.write5m = fp.cum[last] - from
		covered = fp.cum[last]
		s.pruneCache(now)
	}
	u.input = max(fp.total-covered, 1)
	return u
}

// pruneCache drops expired entries now and then. The caller holds s.mu.
func (s *Server) pruneCache(now time.Time) {
	s.st.cacheOps++
	if s.st.cacheOps%256 != 0 {
		return
	}
	for k, e := range s.st.cache {
		if !e.expires.After(now) {
			delete(s.st.cache, k)
		}
	}
}
