package llmfleet

// Sealer protects credentials at rest and fingerprints them. Package vault
// implements it with authenticated encryption under a local secret.
type Sealer interface {
	// Seal encrypts and authenticates a credential.
	Seal(c Credential) ([]byte, error)
	// Unseal reverses Seal for the credential whose fingerprint is
	// credentialID; it fails if the blob was tampered with or belongs to
	// another credential.
	Unseal(credentialID string, sealed []byte) (Credential, error)
	// Fingerprint returns the keyed fingerprint of a credential, used to
	// pool requests and to check access without keeping the secret.
	Fingerprint(c Credential) string
}
