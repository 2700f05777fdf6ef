package conformance

import (
	"bytes"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"ramanserve/server/tlstest"
)

// needCurl returns curl's path. It skips the test when curl is missing,
// except in CI, where `make deps` installs it.
func needCurl(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl is required in CI (make deps): %v", err)
		}
		t.Skipf("curl not installed (make deps installs it): %v", err)
	}
	return path
}

// curlRun is one curl run: its exit code (0: success), and what it wrote.
type curlRun struct {
	exit           int
	stdout, stderr string
}

// curl runs curl silently (errors shown) with a 10 s limit.
func curl(t *testing.T, args ...string) curlRun {
	t.Helper()
	cmd := exec.Command(needCurl(t), append([]string{"-sS", "--max-time", "10"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := curlRun{stdout: stdout.String(), stderr: strings.TrimSpace(stderr.String())}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.exit = exit.ExitCode()
	case err != nil:
		t.Fatalf("curl %q: %v", args, err)
	}
	shown := run.stdout
	if len(shown) > 200 {
		shown = shown[:200] + "..."
	}
	t.Logf("curl %s: exit %d, %q %s", strings.Join(args, " "), run.exit, shown, run.stderr)
	return run
}

// tlsDir holds the PEM files of a test: a CA (ca.pem) and the server
// certificate it signed (server.pem, server.key).
type tlsDir struct {
	dir            string
	ca             *tlstest.CA
	caFile         string
	cert, key      string
	serverCertLeaf tlstest.Leaf
}

func newTLSDir(t *testing.T) *tlsDir {
	t.Helper()
	d := &tlsDir{dir: t.TempDir()}
	d.ca = newTestCA(t, "ramanserve test CA")
	d.caFile = d.write(t, "ca.pem", d.ca.PEM)
	d.cert, d.key = filepath.Join(d.dir, "server.pem"), filepath.Join(d.dir, "server.key")
	d.serverCertLeaf = d.rotate(t)
	return d
}

func newTestCA(t *testing.T, name string) *tlstest.CA {
	t.Helper()
	ca, err := tlstest.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func (d *tlsDir) write(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(d.dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rotate writes a new server certificate and key over server.pem and
// server.key.
func (d *tlsDir) rotate(t *testing.T) tlstest.Leaf {
	t.Helper()
	leaf, err := d.ca.Server("ramanserve")
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.Write(d.cert, d.key); err != nil {
		t.Fatal(err)
	}
	return leaf
}

// clientCert writes a client certificate signed by ca as name.pem and
// name.key, and returns the two paths.
func (d *tlsDir) clientCert(t *testing.T, ca *tlstest.CA, name string) (cert, key string) {
	t.Helper()
	leaf, err := ca.Client(name)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(d.dir, name+".pem"), filepath.Join(d.dir, name+".key")
	if err := leaf.Write(cert, key); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// ok2xx reports whether curl succeeded and its -w '%{http_code}' output
// starts with a 2xx status.
func (r curlRun) ok2xx() bool { return r.exit == 0 && strings.HasPrefix(r.stdout, "2") }

var serialLine = regexp.MustCompile(`(?m)^Serial Number:\s*([0-9A-Fa-f:]+)\s*$`)

// curlSerial is the serial number of the certificate curl was served on a
// new connection to url (curl -w '%{certs}', curl >= 7.88).
func curlSerial(t *testing.T, caFile, url string) *big.Int {
	t.Helper()
	run := curl(t, "--cacert", caFile, "-o", "/dev/null", "-w", "%{certs}", url)
	if run.exit != 0 {
		t.Fatalf("curl --cacert %s %s: exit %d: %s", caFile, url, run.exit, run.stderr)
	}
	m := serialLine.FindStringSubmatch(run.stdout)
	if m == nil {
		t.Fatalf("no serial number in curl's %%{certs} (curl 7.88 or later prints it):\n%s", run.stdout)
	}
	serial, ok := new(big.Int).SetString(strings.ReplaceAll(m[1], ":", ""), 16)
	if !ok {
		t.Fatalf("serial %q", m[1])
	}
	return serial
}

// TestTLSWithCurl: a real ramanserve with -tls-cert and -tls-key answers
// curl --cacert over HTTPS; plain HTTP to the same port gets no 2xx, and
// curl without the CA refuses the server.
func TestTLSWithCurl(t *testing.T) {
	needCurl(t)
	d := newTLSDir(t)
	p := startProcess(t, t.TempDir(), "-tls-cert", d.cert, "-tls-key", d.key)
	url := "https://" + p.httpAddr + "/health"

	ok := curl(t, "--cacert", d.caFile, "-w", "\n%{http_code} %{ssl_verify_result}", url)
	if ok.exit != 0 || !strings.Contains(ok.stdout, `"status"`) || !strings.HasSuffix(ok.stdout, "\n200 0") {
		t.Errorf("curl --cacert %s: exit %d, %q %s; want 200 with the health body", url, ok.exit, ok.stdout, ok.stderr)
	}
	if serial := curlSerial(t, d.caFile, url); serial.Cmp(d.serverCertLeaf.Serial) != 0 {
		t.Errorf("served serial %x, want %x", serial, d.serverCertLeaf.Serial)
	}
	plain := curl(t, "-o", "/dev/null", "-w", "%{http_code}", "http://"+p.httpAddr+"/health")
	if plain.ok2xx() {
		t.Errorf("plain HTTP to the TLS port answered %s", plain.stdout)
	}
	untrusted := curl(t, "-o", "/dev/null", "-w", "%{http_code}", url)
	if untrusted.exit == 0 || untrusted.ok2xx() {
		t.Errorf("curl without --cacert: exit %d, %s; want a certificate error", untrusted.exit, untrusted.stdout)
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// TestMutualTLSWithCurl: with -tls-client-ca, curl without a client
// certificate, or with one from another CA, is refused; with one the CA
// signed, it gets 200.
func TestMutualTLSWithCurl(t *testing.T) {
	needCurl(t)
	d := newTLSDir(t)
	clients := newTestCA(t, "ramanserve clients CA")
	clientsFile := d.write(t, "clients-ca.pem", clients.PEM)
	cert, key := d.clientCert(t, clients, "console")
	strangerCert, strangerKey := d.clientCert(t, newTestCA(t, "another CA"), "stranger")
	p := startProcess(t, t.TempDir(), "-tls-cert", d.cert, "-tls-key", d.key, "-tls-client-ca", clientsFile)
	url := "https://" + p.httpAddr + "/health"

	for _, tc := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"no client certificate", nil, false},
		{"no client certificate, TLS 1.2", []string{"--tls-max", "1.2"}, false},
		{"a client certificate from another CA", []string{"--cert", strangerCert, "--key", strangerKey}, false},
		{"a client certificate from the client CA", []string{"--cert", cert, "--key", key}, true},
		{"a client certificate from the client CA, TLS 1.2", []string{"--tls-max", "1.2", "--cert", cert, "--key", key}, true},
	} {
		args := append([]string{"--cacert", d.caFile, "-o", "/dev/null", "-w", "%{http_code}"}, tc.args...)
		run := curl(t, append(args, url)...)
		if run.ok2xx() != tc.ok || (tc.ok && run.stdout != "200") {
			t.Errorf("%s: exit %d, %q %s", tc.name, run.exit, run.stdout, run.stderr)
		}
	}
}

// TestTLSCertRotatedBySIGHUP: a real ramanserve re-reads its certificate
// on SIGHUP; a new connection sees the new certificate's serial number.
// A certificate file that cannot be read on SIGHUP keeps the previous
// one in use, logs the error, and the process goes on serving.
func TestTLSCertRotatedBySIGHUP(t *testing.T) {
	needCurl(t)
	d := newTLSDir(t)
	p := startProcess(t, t.TempDir(), "-tls-cert", d.cert, "-tls-key", d.key)
	url := "https://" + p.httpAddr + "/health"
	first := curlSerial(t, d.caFile, url)
	if first.Cmp(d.serverCertLeaf.Serial) != 0 {
		t.Fatalf("served serial %x, want %x", first, d.serverCertLeaf.Serial)
	}

	rotated := d.rotate(t)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	reloaded := p.waitLogMsg(t, "SIGHUP: reloaded", 1)
	if reloaded[0]["tls_cert"] != d.cert {
		t.Errorf("reload log line %v, want tls_cert %s", reloaded[0], d.cert)
	}
	if got := curlSerial(t, d.caFile, url); got.Cmp(rotated.Serial) != 0 {
		t.Fatalf("after SIGHUP: serial %x, want the rotated certificate's %x (was %x)", got, rotated.Serial, first)
	}

	d.write(t, "server.pem", []byte("-----BEGIN CERTIFICATE-----\ntruncated\n"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	failed := p.waitLogMsg(t, "SIGHUP: reload failed; what failed keeps its previous value, the rest took effect", 1)
	if err, _ := failed[0]["err"].(string); !strings.Contains(err, "server.pem") || !strings.Contains(err, "previous certificate") {
		t.Errorf("failed reload logged %v", failed[0])
	}
	if got := curlSerial(t, d.caFile, url); got.Cmp(rotated.Serial) != 0 {
		t.Fatalf("after a failed SIGHUP: serial %x, want the previous %x", got, rotated.Serial)
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// TestTLSBadFileFailsStart: a real ramanserve whose -tls-key does not
// match -tls-cert exits 1 at start, naming the files.
func TestTLSBadFileFailsStart(t *testing.T) {
	d := newTLSDir(t)
	_, otherKey := d.clientCert(t, d.ca, "other")
	out, err := exec.Command(serverBinary(t), "-http-addr", "127.0.0.1:0", "-zmq-addr", "tcp://127.0.0.1:0",
		"-registry", filepath.Join(t.TempDir(), "reg"), "-tls-cert", d.cert, "-tls-key", otherKey).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "private key does not match public key") || !strings.Contains(string(out), d.cert) {
		t.Fatalf("start with a key of another certificate: %v\n%s", err, out)
	}
}
