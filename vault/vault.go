// Package vault seals credentials for storage at rest: a pass-through API
// key that llmfleet needs to poll a batch after a restart is kept only as
// an AES-256-GCM ciphertext under a local secret, and is identified by a
// keyed fingerprint that reveals nothing about it.
//
// The secret is 32 random bytes in a file created on first start, 0600 in
// a 0700 directory (Open), or given by the operator (New). Two keys are
// derived from it with HKDF-SHA256 under distinct labels: one seals, the
// other keys the fingerprints, so neither use weakens the other. Each
// sealed blob is bound to its credential's fingerprint as additional
// authenticated data, so a blob moved to another credential id does not
// unseal. Losing the secret loses the sealed credentials, nothing else:
// callers send them again.
//
// A Vault never logs, and prints as "vault.Vault" whatever the verb.
package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"sync"

	"github.com/llmfleet/llmfleet"
)

// SecretSize is the size of the secret Open creates, and the least New
// accepts.
const SecretSize = 32

// The HKDF labels of the derived keys, and the version of the sealed
// format. A change of either makes older blobs unreadable: bump the
// version and keep reading the old one.
const (
	sealLabel        = "llmfleet vault seal v1"
	fingerprintLabel = "llmfleet vault fingerprint v1"
	formatV1         = 0x01
	aadPrefix        = "llmfleet sealed credential v1\x00"
)

// ErrUnseal is returned for a sealed blob that cannot be opened: made
// under another secret, for another credential id, or tampered with.
var ErrUnseal = errors.New("vault: cannot unseal credential (wrong secret, wrong credential id or tampered)")

// Vault seals and unseals credentials under one secret. It is safe for
// concurrent use.
type Vault struct {
	aead  cipher.AEAD
	fpKey []byte
	// macs holds keyed HMACs under fpKey, reset between uses: keying one
	// costs more than the fingerprint itself, which the proxy computes
	// for every request.
	macs sync.Pool
}

// New returns a Vault under an operator-given secret of at least
// SecretSize bytes of high entropy (random bytes, not a password).
func New(secret []byte) (*Vault, error) {
	if len(secret) < SecretSize {
		return nil, fmt.Errorf("vault: secret is %d bytes, want at least %d", len(secret), SecretSize)
	}
	sealKey, err := hkdf.Key(sha256.New, secret, nil, sealLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	fpKey, err := hkdf.Key(sha256.New, secret, nil, fingerprintLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	block, err := aes.NewCipher(sealKey)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	v := &Vault{aead: aead, fpKey: fpKey}
	v.macs.New = func() any { return hmac.New(sha256.New, fpKey) }
	return v, nil
}

// Fingerprint returns the credential's keyed fingerprint
// (llmfleet.Credential.Fingerprint under a key derived from the secret):
// the id under which it is pooled, checked and stored.
func (v *Vault) Fingerprint(c llmfleet.Credential) string {
	m := v.macs.Get().(hash.Hash)
	defer v.macs.Put(m)
	m.Reset()
	var buf [160]byte // room for the usual keys without an allocation
	b := append(buf[:0], "k:"...)
	b = append(b, c.APIKey...)
	b = append(b, 0, 't', ':')
	b = append(b, c.AuthToken...)
	m.Write(b)
	clear(b)
	var sum [sha256.Size]byte
	var out [len(fingerprintPrefix) + 24]byte
	copy(out[:], fingerprintPrefix)
	hex.Encode(out[len(fingerprintPrefix):], m.Sum(sum[:0])[:12])
	return string(out[:])
}

// fingerprintPrefix begins every fingerprint, as llmfleet.Credential's.
const fingerprintPrefix = "cred_"

// Seal encrypts a credential, bound to its fingerprint. Each call uses a
// fresh random nonce, so sealing the same credential twice gives two
// different blobs.
func (v *Vault) Seal(c llmfleet.Credential) ([]byte, error) {
	if c.IsZero() {
		return nil, errors.New("vault: sealing an empty credential")
	}
	plain := encode(c)
	defer clear(plain)
	nonce := make([]byte, v.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	out := make([]byte, 0, 1+len(nonce)+len(plain)+v.aead.Overhead())
	out = append(out, formatV1)
	out = append(out, nonce...)
	return v.aead.Seal(out, nonce, plain, aad(v.Fingerprint(c))), nil
}

// Unseal decrypts a blob made by Seal for the credential whose
// fingerprint is credentialID. It fails with ErrUnseal for a blob sealed
// under another secret or for another credential, or changed in any way.
func (v *Vault) Unseal(credentialID string, sealed []byte) (llmfleet.Credential, error) {
	ns := v.aead.NonceSize()
	if len(sealed) < 1+ns+v.aead.Overhead() || sealed[0] != formatV1 {
		return llmfleet.Credential{}, ErrUnseal
	}
	nonce, ct := sealed[1:1+ns], sealed[1+ns:]
	plain, err := v.aead.Open(nil, nonce, ct, aad(credentialID))
	if err != nil {
		return llmfleet.Credential{}, ErrUnseal
	}
	defer clear(plain)
	c, err := decode(plain)
	if err != nil || v.Fingerprint(c) != credentialID {
		return llmfleet.Credential{}, ErrUnseal
	}
	return c, nil
}

// String prints no key.
func (v *Vault) String() string { return "vault.Vault" }

// GoString prints no key.
func (v *Vault) GoString() string { return "vault.Vault" }

// LogValue logs no key.
func (v *Vault) LogValue() slog.Value { return slog.StringValue("vault.Vault") }

// aad is the additional data a blob is bound to.
func aad(credentialID string) []byte { return []byte(aadPrefix + credentialID) }

// encode lays a credential out as two length-prefixed strings.
func encode(c llmfleet.Credential) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(c.APIKey)+len(c.AuthToken))
	b = binary.AppendUvarint(b, uint64(len(c.APIKey)))
	b = append(b, c.APIKey...)
	b = binary.AppendUvarint(b, uint64(len(c.AuthToken)))
	return append(b, c.AuthToken...)
}

func decode(b []byte) (llmfleet.Credential, error) {
	var c llmfleet.Credential
	field := func() (string, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", errors.New("vault: malformed credential")
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, nil
	}
	var err error
	if c.APIKey, err = field(); err != nil {
		return c, err
	}
	if c.AuthToken, err = field(); err != nil {
		return c, err
	}
	if len(b) != 0 {
		return c, errors.New("vault: malformed credential")
	}
	return c, nil
}
