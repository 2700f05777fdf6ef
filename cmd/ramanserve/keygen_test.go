package main

import (
	"bytes"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ramanserve/server/opcua"
	"ramanserve/server/zmtp/curve"
)

// TestKeygenPrintsAPair: the printed secret key's public half is the
// printed public key, and two runs never print the same pair.
func TestKeygenPrintsAPair(t *testing.T) {
	seen := map[string]bool{}
	for range 2 {
		var out, errOut bytes.Buffer
		if code := runKeygen(nil, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 4 || lines[0] != "== CURVE PUBLIC KEY ==" || lines[2] != "== CURVE SECRET KEY ==" {
			t.Fatalf("output:\n%s", out.String())
		}
		pub, err := curve.ParsePublicKey(lines[1])
		if err != nil {
			t.Fatal(err)
		}
		sec, err := curve.ParseSecretKey(lines[3])
		if err != nil {
			t.Fatal(err)
		}
		if sec.Public() != pub {
			t.Fatal("the printed public key is not the secret key's")
		}
		if seen[lines[3]] {
			t.Fatal("the same secret key twice")
		}
		seen[lines[3]] = true
	}
}

// TestKeygenWritesFiles: -secret-key writes a 0600 secret key file the
// server reads and a public key file beside it, prints no secret, and
// never overwrites either file.
func TestKeygenWritesFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.key")
	var out, errOut bytes.Buffer
	if code := runKeygen([]string{"-secret-key", path}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret key file: %v, %v", st, err)
	}
	sec, err := curve.ReadSecretKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := curve.ReadPublicKeyFile(path + ".pub")
	if err != nil || pub != sec.Public() {
		t.Fatalf("public key file: %v, %v", pub, err)
	}
	if keys, err := curve.ReadPublicKeysFile(path + ".pub"); err != nil || len(keys) != 1 || keys[0] != pub {
		t.Fatalf("the .pub file as an allowlist: %v, %v", keys, err)
	}
	secZ85, _ := curve.EncodeZ85(sec[:])
	if !strings.Contains(out.String(), pub.String()) || strings.Contains(out.String()+errOut.String(), secZ85) {
		t.Fatalf("output must show the public key only:\n%s%s", out.String(), errOut.String())
	}
	before, _ := os.ReadFile(path)

	// Again: refused, and the key stays.
	out.Reset()
	errOut.Reset()
	if code := runKeygen([]string{"-secret-key", path}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "exists") {
		t.Fatalf("second run: exit %d, %s", code, errOut.String())
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the secret key file was overwritten")
	}

	// A .pub in the way: refused before the secret key is written.
	other := filepath.Join(dir, "other.key")
	os.WriteFile(other+".pub", []byte("someone's\n"), 0o644)
	if code := runKeygen([]string{"-secret-key", other}, &out, &errOut); code == 0 {
		t.Fatal("a .pub in the way was overwritten")
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("a secret key was left without its public key: %v", err)
	}
	if code := runKeygen([]string{"extra"}, &out, &errOut); code != 2 {
		t.Fatalf("an unexpected argument: exit %d", code)
	}
}

// TestStartRefusesAnOpenSecretKey: a key written by keygen starts the
// server's CURVE; the same key made readable by the group stops the
// start with a message saying so, before anything is served.
func TestStartRefusesAnOpenSecretKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.key")
	var out, errOut bytes.Buffer
	if code := runKeygen([]string{"-secret-key", path}, &out, &errOut); code != 0 {
		t.Fatalf("keygen: %s", errOut.String())
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	args := []string{"-zmq-curve-secret-key", path, "-registry", filepath.Join(dir, "registry"),
		"-http-addr", "127.0.0.1:0", "-zmq-addr", "tcp://127.0.0.1:0", "-max-training-memory", "67108864"}
	err := run(args, func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") || !strings.Contains(err.Error(), path) {
		t.Fatalf("run = %v, want a refusal naming the file and chmod 600", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "registry")); !os.IsNotExist(err) {
		t.Fatalf("the refused start wrote the registry: %v", err)
	}
}

// keygen -opcua writes a certificate and key the OPC UA server loads,
// with the application URI asked for, and never overwrites them.
func TestKeygenOPCUA(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	var stderr bytes.Buffer
	if code := runKeygen([]string{"-opcua", "-cert", cert, "-key", key, "-uri", "urn:plant:ramanserve", "-host", "raman1,10.0.0.5"}, io.Discard, &stderr); code != 0 {
		t.Fatalf("keygen -opcua exited %d: %s", code, stderr.String())
	}
	der, _, err := opcua.LoadKeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.URIs) != 1 || c.URIs[0].String() != "urn:plant:ramanserve" || len(c.DNSNames) != 1 || c.DNSNames[0] != "raman1" || len(c.IPAddresses) != 1 {
		t.Fatalf("certificate names %v %v %v", c.URIs, c.DNSNames, c.IPAddresses)
	}
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	if code := runKeygen([]string{"-opcua", "-cert", cert, "-key", key}, io.Discard, io.Discard); code == 0 {
		t.Fatal("keygen -opcua overwrote an existing certificate")
	}
	if code := runKeygen([]string{"-opcua", "-cert", cert}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("keygen -opcua without -key exited %d, want 2", code)
	}
}
