package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"ramanserve/server/opcua"
	"ramanserve/server/zmtp/curve"
)

const keygenUsage = `usage: ramanserve keygen [-secret-key FILE]
       ramanserve keygen -opcua -cert FILE -key FILE [-uri URI] [-host NAME,...]

Generates a CurveZMQ key pair and prints it in Z85, like libzmq's
curve_keygen. The secret key goes to the server's -zmq-curve-secret-key
file (or to a client); the public key is handed to the other side: a
server's public key to its clients, a client's to the server's
-zmq-curve-clients allowlist.

-secret-key FILE writes the secret key to FILE, mode 0600, and the public
key to FILE.pub beside it, each as one Z85 line, and prints only the
public key. Neither file may exist already: keygen never overwrites a key.

-opcua makes the OPC UA server's self-signed application instance
certificate instead (-opcua-cert, -opcua-key): RSA 2048, SHA-256, valid
five years, with the application URI (default urn:HOSTNAME:ramanserve)
and the host names clients dial (default HOSTNAME,localhost). The
certificate goes to -cert (PEM), the key to -key (PEM, mode 0600); hand
the certificate to the clients that should trust the server.
`

// runKeygen runs `ramanserve keygen ...` and returns the exit status.
func runKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ramanserve keygen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	secretFile := fs.String("secret-key", "", "write the secret key to this file (mode 0600) and the public key to FILE.pub")
	opcuaCert := fs.Bool("opcua", false, "make an OPC UA application instance certificate instead")
	certFile := fs.String("cert", "", "with -opcua: the certificate file to write")
	keyFile := fs.String("key", "", "with -opcua: the key file to write (mode 0600)")
	uri := fs.String("uri", "", "with -opcua: the application URI (default urn:HOSTNAME:ramanserve)")
	hosts := fs.String("host", "", "with -opcua: comma-separated host names and addresses (default HOSTNAME,localhost)")
	err := fs.Parse(args)
	if err == nil && fs.NArg() == 0 && *opcuaCert {
		if *certFile == "" || *keyFile == "" || *secretFile != "" {
			err = errors.New("-opcua needs -cert FILE and -key FILE (and no -secret-key)")
		} else {
			return runKeygenOPCUA(*certFile, *keyFile, *uri, *hosts, stderr)
		}
	}
	if err != nil || fs.NArg() > 0 {
		if err == nil {
			err = fmt.Errorf("unexpected arguments %q", fs.Args())
		}
		fmt.Fprintln(stderr, "ramanserve keygen:", err)
		fmt.Fprint(stderr, keygenUsage)
		return 2
	}
	public, secret, err := curve.GenerateKeyPair(rand.Reader)
	if err != nil {
		fmt.Fprintln(stderr, "ramanserve keygen:", err)
		return 1
	}
	secretZ85, err := curve.EncodeZ85(secret[:])
	if err != nil {
		fmt.Fprintln(stderr, "ramanserve keygen:", err)
		return 1
	}
	if *secretFile == "" {
		fmt.Fprintf(stdout, "== CURVE PUBLIC KEY ==\n%s\n== CURVE SECRET KEY ==\n%s\n", public, secretZ85)
		return 0
	}
	if err := writeKeyPair(*secretFile, public, secretZ85); err != nil {
		fmt.Fprintln(stderr, "ramanserve keygen:", err)
		return 1
	}
	fmt.Fprintf(stdout, "== CURVE PUBLIC KEY ==\n%s\n", public)
	fmt.Fprintf(stderr, "ramanserve keygen: wrote the secret key to %s (mode 0600) and the public key to %s.pub\n", *secretFile, *secretFile)
	return 0
}

// writeKeyPair writes the secret key file (0600) and the public key file
// beside it (path.pub, 0644). Both are created exclusively: an existing
// key is never overwritten. When the second file cannot be written, the
// secret key file, which this call created, is removed again, so a failed
// run leaves nothing behind.
func writeKeyPair(path string, public curve.PublicKey, secretZ85 string) (err error) {
	pubPath := path + ".pub"
	for _, p := range []string{path, pubPath} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s exists (or cannot be checked); keygen does not overwrite keys", p)
		}
	}
	// Bare key lines, no comment: clients read them as they are
	// (open(path).read().strip() in pyzmq).
	if err := writeNewFile(path, secretZ85+"\n", 0o600); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(path) // ours: created exclusively above
		}
	}()
	return writeNewFile(pubPath, public.String()+"\n", 0o644)
}

// writeNewFile creates path, which must not exist, with mode perm and
// text, synced to disk. A partly written file is removed.
func writeNewFile(path, text string, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; keygen does not overwrite keys", path)
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// runKeygenOPCUA writes the OPC UA server's certificate and key.
func runKeygenOPCUA(certFile, keyFile, uri, hosts string, stderr io.Writer) int {
	host, _ := os.Hostname()
	if uri == "" {
		uri = "urn:" + host + ":ramanserve"
	}
	names := []string{host, "localhost"}
	if hosts != "" {
		names = strings.Split(hosts, ",")
	}
	certPEM, keyPEM, err := opcua.GenerateCertificate(uri, names, time.Now())
	if err == nil {
		for _, p := range []string{certFile, keyFile} {
			if _, serr := os.Lstat(p); !errors.Is(serr, fs.ErrNotExist) {
				err = fmt.Errorf("%s exists (or cannot be checked); keygen does not overwrite keys", p)
			}
		}
	}
	if err == nil {
		err = writeNewFile(keyFile, string(keyPEM), 0o600)
	}
	if err == nil {
		if err = writeNewFile(certFile, string(certPEM), 0o644); err != nil {
			os.Remove(keyFile) // ours: created exclusively above
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "ramanserve keygen:", err)
		return 1
	}
	fmt.Fprintf(stderr, "ramanserve keygen: wrote the OPC UA certificate (application URI %s) to %s and its key to %s (mode 0600)\n", uri, certFile, keyFile)
	return 0
}
