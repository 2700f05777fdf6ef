package opcua

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"time"

	"ramanserve/server/configfile"
)

const maxPEMFileBytes = 1 << 20

// LoadKeyPair reads the server's certificate (PEM or DER) and its RSA key
// (PEM, PKCS #1 or PKCS #8); the key file must be private to its owner.
func LoadKeyPair(certFile, keyFile string) ([]byte, *rsa.PrivateKey, error) {
	certBytes, err := configfile.Read(certFile, maxPEMFileBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("opc ua certificate: %w", err)
	}
	der := certBytes
	if blk, _ := pem.Decode(certBytes); blk != nil {
		der = blk.Bytes
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("opc ua certificate %s: %w", certFile, err)
	}
	keyBytes, err := configfile.ReadPrivate(keyFile, maxPEMFileBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("opc ua key: %w", err)
	}
	blk, _ := pem.Decode(keyBytes)
	if blk == nil {
		return nil, nil, fmt.Errorf("opc ua key %s: no PEM block", keyFile)
	}
	var key *rsa.PrivateKey
	if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
		key = k
	} else if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
		key, _ = k.(*rsa.PrivateKey)
	}
	if key == nil {
		return nil, nil, fmt.Errorf("opc ua key %s: not an RSA private key (OPC UA's policies need RSA)", keyFile)
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, fmt.Errorf("opc ua: the key %s is not the certificate's (%s)", keyFile, certFile)
	}
	if len(cert.URIs) == 0 {
		return nil, nil, fmt.Errorf("opc ua certificate %s: no application URI (a URI subject alternative name); ramanserve keygen -opcua makes one", certFile)
	}
	return cert.Raw, key, nil
}

// CertificateValidity is how long a certificate of GenerateCertificate is
// valid.
const CertificateValidity = 5 * 365 * 24 * time.Hour

// GenerateCertificate makes a self-signed application instance
// certificate for the OPC UA server (Part 6, 6.2.2): RSA 2048, SHA-256,
// the application URI uri and the host names or addresses hosts as its
// subject alternative names, valid from now for CertificateValidity. It
// returns the certificate and the key (PKCS #8), PEM.
func GenerateCertificate(uri string, hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" {
		return nil, nil, fmt.Errorf("application URI %q is not a URI", uri)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "ramanserve", Organization: []string{"ramanserve"}},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(CertificateValidity),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment |
			x509.KeyUsageDataEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		URIs:                  []*url.URL{u},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), nil
}
