package emulator

import (
	"crypto/sha256"
	"math/big"
)

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// idText returns 22 base-62 characters derived from seed, the tail of an
// Anthropic-style id such as msg_01XFDUDYJgAACzvnptvVoYEL.
func idText(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	n := new(big.Int).SetBytes(sum[:])
	base := big.NewInt(int64(len(idAlphabet)))
	out := make([]byte, 22)
	mod := new(big.Int)
	for i := range out {
		n.DivMod(n, base, mod)
		out[i] = idAlphabet[mod.Int64()]
	}
	return string(out)
}
