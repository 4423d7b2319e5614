package sqlite

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Ledger entries are stored in blocks (migration 0008): one row of
// ledger_blocks per write, holding that write's entries in the compact
// binary form below, so that a group commit of a thousand entries is one
// row rather than a thousand, each with its index updates. (An entry is
// written once and read only by period, so nothing is lost by not giving
// it a row of its own.)
//
// A block is a version byte (blockVersion) followed by its entries, each
// a sequence of fields in a fixed order: integers as varints (signed ones
// zigzag), strings as a uvarint length and bytes, floats as 8 bytes
// little-endian, bools as one byte.

// blockVersion is the version of the encoding written: 2 adds, after
// the flags, MissUSD (a float) and Rewrite (a string), and flag 4 for
// Estimated. Blocks of version 1 are still read.
const blockVersion = 2

// errBadBlock is returned for a block that is not a valid encoding.
var errBadBlock = errors.New("sqlite: malformed ledger block")

// appendBlock appends the encoding of entries to buf.
func appendBlock(buf []byte, entries []llmfleet.LedgerEntry) []byte {
	buf = append(buf, blockVersion)
	for i := range entries {
		buf = appendEntryBytes(buf, &entries[i])
	}
	return buf
}

// appendEntryBytes appends the encoding of one entry.
func appendEntryBytes(b []byte, e *llmfleet.LedgerEntry) []byte {
	b = binary.AppendVarint(b, e.Time.UnixNano())
	for _, s := range [...]string{e.RequestID, e.BatchID, e.Provider, e.Model, string(e.Route),
		e.Outcome, string(e.Rescue), e.Client, string(e.Tier)} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	u := &e.Usage
	for _, v := range [...]int64{u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens,
		u.CacheReadInputTokens, u.CacheCreation.Ephemeral5mInputTokens, u.CacheCreation.Ephemeral1hInputTokens,
		int64(e.Queued), int64(e.Turnaround), int64(e.Latency), int64(e.Budget)} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.CostUSD))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.OtherRouteUSD))
	var flags byte
	if e.Priced {
		flags |= 1
	}
	if e.BudgetMet {
		flags |= 2
	}
	if e.Estimated {
		flags |= 4
	}
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.MissUSD))
	b = binary.AppendUvarint(b, uint64(len(e.Rewrite)))
	return append(b, e.Rewrite...)
}

// decodeBlock calls fn with each entry of a block, in the order they were
// written, and fails on any malformed or unknown encoding.
func decodeBlock(data []byte, fn func(llmfleet.LedgerEntry)) error {
	if len(data) == 0 || data[0] < 1 || data[0] > blockVersion {
		return errBadBlock
	}
	version := data[0]
	d := blockDecoder{b: data[1:]}
	for len(d.b) > 0 {
		var e llmfleet.LedgerEntry
		e.Time = time.Unix(0, d.varint()).UTC()
		var route, rescue, tier string
		for _, s := range [...]*string{&e.RequestID, &e.BatchID, &e.Provider, &e.Model, &route,
			&e.Outcome, &rescue, &e.Client, &tier} {
			*s = d.str()
		}
		e.Route, e.Rescue, e.Tier = llmfleet.Route(route), llmfleet.Rescue(rescue), llmfleet.Tier(tier)
		u := &e.Usage
		var queued, turnaround, latency, budget int64
		for _, v := range [...]*int64{&u.InputTokens, &u.OutputTokens, &u.CacheCreationInputTokens,
			&u.CacheReadInputTokens, &u.CacheCreation.Ephemeral5mInputTokens, &u.CacheCreation.Ephemeral1hInputTokens,
			&queued, &turnaround, &latency, &budget} {
			*v = d.varint()
		}
		e.Queued, e.Turnaround, e.Latency, e.Budget = time.Duration(queued), time.Duration(turnaround),
			time.Duration(latency), time.Duration(budget)
		e.CostUSD = math.Float64frombits(d.uint64())
		e.OtherRouteUSD = math.Float64frombits(d.uint64())
		flags := d.byte()
		if version >= 2 {
			e.MissUSD = math.Float64frombits(d.uint64())
			e.Rewrite = d.str()
		}
		if d.err != nil || flags > 7 || (version < 2 && flags > 3) {
			return errBadBlock
		}
		e.Priced, e.BudgetMet, e.Estimated = flags&1 != 0, flags&2 != 0, flags&4 != 0
		fn(e)
	}
	return nil
}

// blockDecoder reads the fields of a block; after the first malformed
// one, err is set and every read returns a zero value.
type blockDecoder struct {
	b   []byte
	err error
}

func (d *blockDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errBadBlock
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *blockDecoder) str() string {
	if d.err != nil {
		return ""
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.err = errBadBlock
		return ""
	}
	s := string(d.b[k : k+int(n)])
	d.b = d.b[k+int(n):]
	return s
}

func (d *blockDecoder) uint64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.err = errBadBlock
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *blockDecoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.err = errBadBlock
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}
