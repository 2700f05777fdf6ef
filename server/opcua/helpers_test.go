package opcua

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"

	"ramanserve/server/opcua/opcuatest"
	"ramanserve/service/live"
)

// wait is the generous deadline of every wait: the machine is busy and
// tests run under the race detector.
const wait = 20 * time.Second

// identity is an application instance certificate and its key.
type identity struct {
	der []byte
	key *rsa.PrivateKey
}

func newIdentity(t testing.TB, uri string) identity {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(uri)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: uri},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageContentCommitment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:        []*url.URL{u}, DNSNames: []string{"localhost"},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return identity{der: der, key: key}
}

type fixture struct {
	srv     *Server
	feed    *live.Feed
	server  identity
	client  identity
	trusted string
}

// start serves on a free loopback port; change edits the options first.
func start(t testing.TB, change func(*Options)) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{feed: live.NewFeed(0), server: newIdentity(t, "urn:ramanserve:test"), client: newIdentity(t, "urn:ramanserve:test-client"),
		trusted: filepath.Join(dir, "trusted")}
	if err := os.MkdirAll(f.trusted, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.trusted, "client.der"), f.client.der, 0o600); err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Addr: "opc.tcp://127.0.0.1:0", AllowInsecure: true,
		Certificate: f.server.der, Key: f.server.key,
		Trust: &TrustList{Trusted: f.trusted, Rejected: filepath.Join(dir, "rejected")},
		Feed:  f.feed, UncertainBelow: 0.5, ServerVersion: "test",
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if change != nil {
		change(&opts)
	}
	srv, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f.srv = srv
	return f
}

// endpointURL is the server's URL as a client dials it.
func (f *fixture) endpointURL() string { return f.srv.URL() }

// dial connects a gopcua client with policy ("None" or a policy name) and
// mode, anonymous when user is "".
func (f *fixture) dial(t testing.TB, policy string, mode ua.MessageSecurityMode, user, password string) (*opcua.Client, error) {
	t.Helper()
	cl := opcuatest.Client{Policy: policy, Mode: mode, User: user, Password: password, Timeout: wait}
	if policy != "None" {
		cl.Key, cl.DER = f.client.key, f.client.der
	}
	c, err := opcuatest.Dial(context.Background(), f.endpointURL(), cl)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c, nil
}

// nodeID is a variable of the server's namespace by its path.
func (f *fixture) nodeID(path string) *ua.NodeID { return ua.NewStringNodeID(f.srv.space.nsID, path) }
