package opcua

import (
	"bytes"
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
)

// Bounds of the trust list's folders: what a folder (an operator's
// mistake) can make the server read, and how many rejected certificates
// it keeps for review.
const (
	maxTrustedFiles     = 1000
	maxTrustedFileBytes = 64 << 10
	maxRejectedFiles    = 256
)

// TrustList decides client certificates: trusted are those whose DER is
// in the trusted folder (.der, or PEM in .pem/.crt), read again at every
// OpenSecureChannel so that moving a file in takes effect at once; a
// refused certificate is written to the rejected folder, named by its
// SHA-1 thumbprint, for the operator to review and move.
type TrustList struct {
	Trusted, Rejected string
	Log               *slog.Logger
	Now               func() time.Time

	mu sync.Mutex // one rejected-folder write at a time
}

// check answers an OpenSecureChannel's client certificate (DER, possibly
// followed by its chain).
func (t *TrustList) check(der []byte) ua.StatusCode {
	certs, err := x509.ParseCertificates(der)
	if err != nil || len(certs) == 0 {
		return ua.StatusBadCertificateInvalid
	}
	leaf := certs[0]
	if t == nil || !t.trusted(leaf.Raw) {
		t.reject(leaf.Raw)
		return ua.StatusBadCertificateUntrusted
	}
	now := time.Now()
	if t.Now != nil {
		now = t.Now()
	}
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return ua.StatusBadCertificateTimeInvalid
	}
	return ua.StatusOK
}

func (t *TrustList) trusted(raw []byte) bool {
	if t.Trusted == "" {
		return false
	}
	entries, err := os.ReadDir(t.Trusted)
	if err != nil {
		t.log().Warn("opc ua: cannot read the trusted certificates", "dir", t.Trusted, "err", err)
		return false
	}
	for i, e := range entries {
		if i >= maxTrustedFiles {
			break
		}
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() > maxTrustedFileBytes {
			continue
		}
		b, err := os.ReadFile(filepath.Join(t.Trusted, e.Name()))
		if err != nil {
			continue
		}
		if bytes.Equal(b, raw) {
			return true
		}
		for rest := b; ; {
			var blk *pem.Block
			blk, rest = pem.Decode(rest)
			if blk == nil {
				break
			}
			if blk.Type == "CERTIFICATE" && bytes.Equal(blk.Bytes, raw) {
				return true
			}
		}
	}
	return false
}

func (t *TrustList) reject(raw []byte) {
	if t == nil || t.Rejected == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	sum := sha1.Sum(raw) // OPC UA names certificates by their SHA-1 thumbprint
	name := filepath.Join(t.Rejected, strings.ToUpper(hex.EncodeToString(sum[:]))+".der")
	if _, err := os.Stat(name); err == nil {
		return
	}
	if err := os.MkdirAll(t.Rejected, 0o700); err != nil {
		t.log().Warn("opc ua: cannot keep a rejected certificate", "err", err)
		return
	}
	if entries, err := os.ReadDir(t.Rejected); err == nil && len(entries) >= maxRejectedFiles {
		t.log().Warn("opc ua: the rejected folder is full; a refused certificate was not kept", "dir", t.Rejected, "max", maxRejectedFiles)
		return
	}
	if err := os.WriteFile(name, raw, 0o600); err != nil {
		t.log().Warn("opc ua: cannot keep a rejected certificate", "err", err)
		return
	}
	t.log().Warn("opc ua: refused an untrusted client certificate; kept for review", "file", name)
}

func (t *TrustList) log() *slog.Logger {
	if t.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Log
}

// checkOpen is the gate's check of an OpenSecureChannel.
func (s *Server) checkOpen(o *openHeader) (ua.StatusCode, bool) {
	if o.SecurityPolicyURI == ua.SecurityPolicyURINone {
		return ua.StatusOK, !s.opts.AllowInsecure
	}
	offered := false
	for _, p := range securePolicies {
		offered = offered || p == o.SecurityPolicyURI
	}
	if !offered || s.opts.Certificate == nil {
		return ua.StatusBadSecurityPolicyRejected, false
	}
	return s.opts.Trust.check(o.SenderCertificate), false
}
