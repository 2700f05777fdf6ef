// Package tlstest makes certificate authorities and the server and client
// certificates they sign, as PEM, for tests of the management channel's
// TLS: ECDSA P-256 keys, fresh random serial numbers, valid for a day.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// CA is a self-signed certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA's certificate, what -tls-client-ca and curl's
	// --cacert read.
	PEM []byte
}

// Leaf is a certificate signed by a CA and its private key.
type Leaf struct {
	CertPEM, KeyPEM []byte
	Serial          *big.Int
}

// NewCA makes a CA named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(name)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Pool is a pool holding the CA alone, for a Go client's RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Server issues a server certificate for localhost, 127.0.0.1 and ::1.
func (ca *CA) Server(name string) (Leaf, error) {
	tmpl, err := template(name)
	if err != nil {
		return Leaf{}, err
	}
	tmpl.DNSNames = []string{"localhost"}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.issue(tmpl)
}

// Client issues a client certificate named name (mutual TLS).
func (ca *CA) Client(name string) (Leaf, error) {
	tmpl, err := template(name)
	if err != nil {
		return Leaf{}, err
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(tmpl)
}

func (ca *CA) issue(tmpl *x509.Certificate) (Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Leaf{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Leaf{}, err
	}
	return Leaf{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		Serial:  tmpl.SerialNumber,
	}, nil
}

// template is a certificate valid from an hour ago for a day, with a
// random 127-bit serial number.
func template(name string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}, nil
}

// Write writes the certificate to certPath and the key, readable by its
// owner only, to keyPath.
func (l Leaf) Write(certPath, keyPath string) error {
	if err := os.WriteFile(certPath, l.CertPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyPath, l.KeyPEM, 0o600)
}

// TLSCertificate is the pair as a Go client presents it.
func (l Leaf) TLSCertificate() (tls.Certificate, error) {
	c, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlstest: %w", err)
	}
	return c, nil
}
