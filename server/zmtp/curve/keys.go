package curve

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"

	"ramanserve/server/configfile"
)

// KeySize is the size of a Curve25519 key; its Z85 text is Z85KeySize long.
const (
	KeySize    = 32
	Z85KeySize = 40
)

// Limits of the key files: far beyond any real file, small enough that a
// wrong path (a log, a device) is refused rather than read whole.
const (
	maxKeyFileSize  = 64 << 10
	maxKeysFileSize = 16 << 20
	maxKeyLineSize  = 4 << 10
)

// PublicKey is a Curve25519 public key. Its String is Z85.
type PublicKey [KeySize]byte

// SecretKey is a Curve25519 secret key. It has no String method (there is
// no way to get its Z85 from this package but EncodeZ85 of its bytes), and
// fmt prints it as a placeholder whatever the verb, so a secret key in a
// logged configuration or error is never printed by accident.
type SecretKey [KeySize]byte

// ErrKeyFile reports a key file that is unsafe or malformed.
var ErrKeyFile = errors.New("curve: bad key file")

// GenerateKeyPair returns a fresh key pair read from rand (nil: crypto/rand).
func GenerateKeyPair(r io.Reader) (PublicKey, SecretKey, error) {
	if r == nil {
		r = rand.Reader
	}
	pub, sec, err := box.GenerateKey(r)
	if err != nil {
		return PublicKey{}, SecretKey{}, fmt.Errorf("curve: generate key pair: %w", err)
	}
	return *pub, *sec, nil
}

// Public derives the public key of k.
func (k SecretKey) Public() PublicKey {
	var p PublicKey
	pub, err := curve25519.X25519(k[:], curve25519.Basepoint)
	if err != nil {
		// X25519 with the base point fails only for a low-order input
		// point, which the base point is not.
		panic("curve: X25519 with the base point failed: " + err.Error())
	}
	copy(p[:], pub)
	return p
}

// String is the key in Z85 (40 characters).
func (k PublicKey) String() string {
	s, _ := EncodeZ85(k[:]) // 32 is a multiple of 4
	return s
}

// ParsePublicKey parses a 40-character Z85 public key.
func ParsePublicKey(z85 string) (PublicKey, error) {
	var k PublicKey
	err := parseKey(z85, k[:])
	return k, err
}

// ParseSecretKey parses a 40-character Z85 secret key. Its errors never
// quote the input.
func ParseSecretKey(z85 string) (SecretKey, error) {
	var k SecretKey
	err := parseKey(z85, k[:])
	return k, err
}

func parseKey(z85 string, dst []byte) error {
	if len(z85) != Z85KeySize {
		return fmt.Errorf("%w: a key is %d characters, not %d", ErrZ85, Z85KeySize, len(z85))
	}
	b, err := DecodeZ85(z85)
	if err != nil {
		return errors.New("curve: key is not valid Z85")
	}
	copy(dst, b)
	return nil
}

// ReadSecretKeyFile reads a secret key file: one Z85 key, blank lines and
// lines starting with # ignored. A file that group or others may read or
// write is refused, as ssh does with private keys.
func ReadSecretKeyFile(path string) (SecretKey, error) {
	data, err := readKeyFile(path, maxKeyFileSize, configfile.Private)
	if err != nil {
		return SecretKey{}, err
	}
	var k SecretKey
	if err := parseSingleKey(data, k[:]); err != nil {
		return SecretKey{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// ReadPublicKeyFile reads a file holding one Z85 public key (blank lines and
// # comments ignored).
func ReadPublicKeyFile(path string) (PublicKey, error) {
	data, err := readKeyFile(path, maxKeyFileSize, configfile.Public)
	if err != nil {
		return PublicKey{}, err
	}
	var k PublicKey
	if err := parseSingleKey(data, k[:]); err != nil {
		return PublicKey{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// ParsePublicKeys parses one Z85 public key per line. Blank lines and lines
// whose first non-blank character is # are ignored; surrounding blanks and a
// trailing \r are trimmed. Duplicates are kept (harmless in an allowlist).
// Errors name the line, never quote it.
func ParsePublicKeys(r io.Reader) ([]PublicKey, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), maxKeyLineSize)
	var keys []PublicKey
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		k, err := ParsePublicKey(text)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrKeyFile, line, err)
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyFile, err)
	}
	return keys, nil
}

// ReadPublicKeysFile reads a public keys file (see ParsePublicKeys). Such
// a file is an allowlist: one others may write is refused, or any local
// user could list their own key.
func ReadPublicKeysFile(path string) ([]PublicKey, error) {
	data, err := readKeyFile(path, maxKeysFileSize, configfile.Trusted)
	if err != nil {
		return nil, err
	}
	keys, err := ParsePublicKeys(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

// readKeyFile reads a regular file of at most limit bytes whose mode
// access allows (configfile: a secret key must not be accessible to group
// or others, an allowlist not writable by others). A FIFO, a device or a
// directory is refused at once: a wrong path must fail a start or a
// reload, not block it.
func readKeyFile(path string, limit int64, access configfile.Access) ([]byte, error) {
	data, err := configfile.ReadAs(path, limit, access)
	switch {
	case errors.Is(err, configfile.ErrNotPrivate):
		return nil, fmt.Errorf("%w: %v; a secret key must not be accessible to group or others", ErrKeyFile, err)
	case errors.Is(err, configfile.ErrWorldWritable):
		return nil, fmt.Errorf("%w: %v; any user could add their own key to it", ErrKeyFile, err)
	case errors.Is(err, configfile.ErrNotRegular), errors.Is(err, configfile.ErrTooLarge):
		return nil, fmt.Errorf("%w: %v", ErrKeyFile, err)
	case err != nil:
		return nil, fmt.Errorf("curve: %w", err)
	}
	return data, nil
}

// parseSingleKey finds exactly one key line in data.
func parseSingleKey(data []byte, dst []byte) error {
	found := false
	for i, line := range strings.Split(string(data), "\n") {
		text := strings.TrimSpace(line)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if found {
			return fmt.Errorf("%w: more than one key (line %d)", ErrKeyFile, i+1)
		}
		if err := parseKey(text, dst); err != nil {
			return fmt.Errorf("%w: line %d: %v", ErrKeyFile, i+1, err)
		}
		found = true
	}
	if !found {
		return fmt.Errorf("%w: no key", ErrKeyFile)
	}
	return nil
}

// Format prints a placeholder whatever the verb, so that a secret key in a
// logged struct or error is never printed by accident.
func (k SecretKey) Format(f fmt.State, verb rune) {
	_, _ = io.WriteString(f, "curve.SecretKey(redacted)")
}
