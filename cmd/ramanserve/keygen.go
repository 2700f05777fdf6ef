package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"ramanserve/server/zmtp/curve"
)

const keygenUsage = `usage: ramanserve keygen [-secret-key FILE]

Generates a CurveZMQ key pair and prints it in Z85, like libzmq's
curve_keygen. The secret key goes to the server's -zmq-curve-secret-key
file (or to a client); the public key is handed to the other side: a
server's public key to its clients, a client's to the server's
-zmq-curve-clients allowlist.

-secret-key FILE writes the secret key to FILE, mode 0600, and the public
key to FILE.pub beside it, each as one Z85 line, and prints only the
public key. Neither file may exist already: keygen never overwrites a key.
`

// runKeygen runs `ramanserve keygen ...` and returns the exit status.
func runKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ramanserve keygen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	secretFile := fs.String("secret-key", "", "write the secret key to this file (mode 0600) and the public key to FILE.pub")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
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
