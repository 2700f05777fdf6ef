package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

	"ramanserve/server/configfile"
)

// TLSConfig serves the management channel over TLS (-tls-cert, -tls-key,
// -tls-client-ca). Empty CertFile: plain HTTP.
type TLSConfig struct {
	CertFile, KeyFile string
	// ClientCAFile, when set, requires and verifies a client certificate
	// signed by one of its CAs (mutual TLS).
	ClientCAFile string
}

// check refuses a half-configured TLSConfig: a certificate without its
// key or the other way round, or client CAs on a plain channel.
func (c TLSConfig) check() error {
	switch {
	case c.CertFile == "" && c.KeyFile == "" && c.ClientCAFile == "":
		return nil
	case c.CertFile == "" || c.KeyFile == "":
		return errors.New("TLS needs both a certificate file (-tls-cert) and its key file (-tls-key)")
	}
	return nil
}

// baseTLSConfig is what every configuration of the management channel
// shares. TLS 1.2 offers ECDHE key exchange (forward secrecy) with an
// AEAD cipher only: no CBC, no RSA key exchange, no SHA-1 MAC. TLS 1.3's
// suites are all of that kind; Go's default key exchange groups are kept
// (X25519 first, with the post-quantum hybrid X25519MLKEM768 on TLS 1.3).
// ALPN offers HTTP/1.1 only: the connection cap, its eviction order, the
// health reserve and the body deadlines all count one request at a time
// per connection, which HTTP/2's streams would not respect. Session
// tickets are off: a resumed session skips the client certificate check,
// which would let a client whose CA a reload removed back in. A
// management channel's few kept-alive connections lose nothing by it.
func baseTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		// HTTP/1.1 only: the connection cap reads each connection's
		// state from net/http's hooks, which HTTP/2 connections skip
		// (they would stay StateNew, and shutdown would cut their answers).
		NextProtos:             []string{"http/1.1"},
		SessionTicketsDisabled: true,
	}
}

// managementTLS is the management channel's TLS material: the
// configuration read from the files last, swapped whole by a reload, so
// that a handshake sees one certificate and one set of client CAs, both
// old or both new.
type managementTLS struct {
	files   TLSConfig
	current atomic.Pointer[tls.Config]
}

// newManagementTLS reads the files; nil when TLS is off.
func newManagementTLS(files TLSConfig, log *slog.Logger) (*managementTLS, error) {
	if err := files.check(); err != nil {
		return nil, err
	}
	if files.CertFile == "" {
		return nil, nil
	}
	m := &managementTLS{files: files}
	cfg, err := m.read(log)
	if err != nil {
		return nil, err
	}
	m.current.Store(cfg)
	return m, nil
}

// listenerConfig is the listener's configuration: each handshake uses
// the configuration current when its ClientHello arrives. The connection
// cap learns then that the client has sent a whole ClientHello: its
// connection is not evicted while this server computes its answer (on a
// busy machine that can take longer than any grace), and once the answer
// is written it has helloGrace to finish the handshake and send its
// request (connlimit.go).
func (m *managementTLS) listenerConfig() *tls.Config {
	cfg := baseTLSConfig()
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if lc, ok := hello.Conn.(*limitedConn); ok {
			lc.tlsHello.Store(true) // a TLS client, not a silent one: it gets helloGrace
			lc.serverTurn.Store(true)
		}
		return m.current.Load(), nil
	}
	return cfg
}

// read reads the certificate, its key and the client CAs into a new
// configuration, and logs what it will serve.
func (m *managementTLS) read(log *slog.Logger) (*tls.Config, error) {
	pair, err := readKeyPair(m.files.CertFile, m.files.KeyFile)
	if err != nil {
		return nil, err
	}
	cfg := baseTLSConfig()
	cfg.Certificates = []tls.Certificate{pair}
	if m.files.ClientCAFile != "" {
		pool, err := readCertPool(m.files.ClientCAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	leaf := pair.Leaf
	log.Info("management channel: TLS certificate", "subject", leaf.Subject.String(), "serial", fmt.Sprintf("%X", leaf.SerialNumber), // hex, as openssl x509 -serial prints it
		"not_after", leaf.NotAfter.UTC().Format(time.RFC3339), "mutual_tls", m.files.ClientCAFile != "")
	if now := time.Now(); now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		log.Warn("management channel: the TLS certificate is not valid now; clients will refuse it",
			"not_before", leaf.NotBefore.UTC().Format(time.RFC3339), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	// Group-readable is the usual way to hand a key to a service user
	// (root:ramanserve 0640); readable by everyone is a leak.
	if st, err := os.Stat(m.files.KeyFile); err == nil && st.Mode().Perm()&0o004 != 0 {
		log.Warn("management channel: the TLS key file is readable by every user", "file", m.files.KeyFile, "mode", st.Mode().Perm().String())
	}
	return cfg, nil
}

// maxPEMFileBytes bounds each TLS file: a certificate chain takes a few
// KiB, a large CA bundle a few hundred.
const maxPEMFileBytes = 1 << 20

// readKeyPair reads the certificate chain and its private key.
func readKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := configfile.Read(certFile, maxPEMFileBytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("TLS certificate: %w", err)
	}
	keyPEM, err := configfile.Read(keyFile, maxPEMFileBytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("TLS key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("TLS certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return pair, nil
}

// readCertPool reads a PEM file of client CA certificates; one without
// any is an error, since it would refuse every client, and so is one
// others may write, since any local user could add a CA of their own and
// sign themselves a client certificate.
func readCertPool(path string) (*x509.CertPool, error) {
	b, err := configfile.ReadTrusted(path, maxPEMFileBytes)
	if err != nil {
		return nil, fmt.Errorf("TLS client CAs: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("TLS client CAs: %s holds no PEM certificate", path)
	}
	return pool, nil
}

// loadTLS reads the TLS files at start: a file that cannot be read fails
// the start.
func (t *Transports) loadTLS() error {
	m, err := newManagementTLS(t.cfg.HTTP.TLS, t.log.With("component", "http"))
	if err != nil {
		return err
	}
	t.tls = m
	return nil
}

// httpListener is what the management server serves: the connection cap's
// listener, under TLS when it is on. The cap counts TCP connections, and
// sees a TLS one's handshake as its client's first bytes.
func (t *Transports) httpListener() net.Listener {
	if t.tls == nil {
		return t.httpLn
	}
	return tls.NewListener(t.httpLn, t.tls.listenerConfig())
}

// reloadTLS re-reads the certificate, key and client CAs (SIGHUP). When a
// file cannot be read, the previous configuration stays in force.
// Connections already open keep the certificate they were shaken hands
// with; new ones get the new one.
func (t *Transports) reloadTLS(ctx context.Context) error {
	if t.tls == nil {
		return nil
	}
	cfg, err := t.tls.read(t.log.With("component", "http"))
	if err != nil {
		return fmt.Errorf("%w; the previous certificate and client CAs stay in use", err)
	}
	t.tls.current.Store(cfg)
	return nil
}

// httpErrorLog is the management server's error log. A failed TLS
// handshake is the client's doing (a port scanner, a plain HTTP client, a
// client without a certificate, one the connection cap closed) and
// anyone can cause any number of them: they are logged at debug level,
// everything else net/http reports at warn.
func httpErrorLog(l *slog.Logger) *log.Logger {
	return log.New(errorLogWriter{l}, "", 0)
}

type errorLogWriter struct{ l *slog.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	msg := string(bytes.TrimRight(p, "\n"))
	level := slog.LevelWarn
	if bytes.HasPrefix(p, []byte("http: TLS handshake error")) {
		level = slog.LevelDebug
	}
	w.l.Log(context.Background(), level, msg)
	return len(p), nil
}
