package curve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The example key pairs of libzmq's zmq_curve(7) manual page; the public
// halves were checked against libzmq's zmq_curve_public.
const (
	docServerPublic = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
	docServerSecret = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
	docClientPublic = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
	docClientSecret = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs"
)

func TestPublicFromSecretMatchesLibzmq(t *testing.T) {
	for _, pair := range [][2]string{{docServerSecret, docServerPublic}, {docClientSecret, docClientPublic}} {
		sec, err := ParseSecretKey(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		if got := sec.Public().String(); got != pair[1] {
			t.Errorf("Public() = %s, want %s", got, pair[1])
		}
	}
}

func TestGenerateKeyPair(t *testing.T) {
	pub, sec, err := GenerateKeyPair(nil)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Public() != pub {
		t.Fatal("public key does not belong to the secret key")
	}
	back, err := ParsePublicKey(pub.String())
	if err != nil || back != pub {
		t.Fatalf("ParsePublicKey(String()) = %v, %v", back, err)
	}
	if _, _, err := GenerateKeyPair(strings.NewReader("short")); err == nil {
		t.Fatal("a failing random source gave a key pair")
	}
}

func TestParseKeyRefusalsDoNotQuoteSecret(t *testing.T) {
	bad := "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh\"" // 40 characters, one outside the alphabet
	_, err := ParseSecretKey(bad)
	if err == nil || strings.Contains(err.Error(), "JTKVSB") || strings.Contains(err.Error(), `"`) {
		t.Fatalf("ParseSecretKey error %v", err)
	}
	if _, err := ParsePublicKey(docClientPublic[:39]); err == nil {
		t.Fatal("39 characters accepted")
	}
}

func writeFile(t *testing.T, name, text string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // umask-proof
		t.Fatal(err)
	}
	return p
}

func TestReadSecretKeyFile(t *testing.T) {
	p := writeFile(t, "server.key", "# ramanserve server key\n\n"+docServerSecret+"\r\n", 0o600)
	k, err := ReadSecretKeyFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if k.Public().String() != docServerPublic {
		t.Fatal("wrong key read")
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o620} {
		p := writeFile(t, "open.key", docServerSecret+"\n", mode)
		if _, err := ReadSecretKeyFile(p); !errors.Is(err, ErrKeyFile) {
			t.Errorf("mode %#o: %v, want ErrKeyFile", mode, err)
		}
	}
	for name, text := range map[string]string{
		"empty":  "# nothing\n",
		"two":    docServerSecret + "\n" + docClientSecret + "\n",
		"broken": docServerSecret[:30] + "\n",
	} {
		p := writeFile(t, name, text, 0o600)
		_, err := ReadSecretKeyFile(p)
		if !errors.Is(err, ErrKeyFile) || strings.Contains(err.Error(), docServerSecret[:10]) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ReadSecretKeyFile(t.TempDir()); !errors.Is(err, ErrKeyFile) {
		t.Errorf("directory: %v", err)
	}
	big := writeFile(t, "big", strings.Repeat("#", maxKeyFileSize+1), 0o600)
	if _, err := ReadSecretKeyFile(big); !errors.Is(err, ErrKeyFile) {
		t.Errorf("oversized file: %v", err)
	}
}

func TestReadPublicKeyFiles(t *testing.T) {
	p := writeFile(t, "server.pub", docServerPublic+"\n", 0o644)
	if k, err := ReadPublicKeyFile(p); err != nil || k.String() != docServerPublic {
		t.Fatalf("ReadPublicKeyFile = %v, %v", k, err)
	}
	p = writeFile(t, "clients", "# rig A\n"+docClientPublic+"\n\n   # rig B, indented comment\n  "+docServerPublic+"  \r\n", 0o644)
	keys, err := ReadPublicKeysFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].String() != docClientPublic || keys[1].String() != docServerPublic {
		t.Fatalf("keys = %v", keys)
	}
	p = writeFile(t, "bad", docClientPublic+"\nnot a key\n", 0o644)
	if _, err := ReadPublicKeysFile(p); !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad line: %v", err)
	}
	p = writeFile(t, "none", "", 0o644)
	if keys, err := ReadPublicKeysFile(p); err != nil || len(keys) != 0 {
		t.Fatalf("empty file: %v, %v", keys, err)
	}
	p = writeFile(t, "longline", strings.Repeat("x", maxKeyLineSize+10)+"\n", 0o644)
	if _, err := ReadPublicKeysFile(p); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("long line: %v", err)
	}
}

func FuzzParsePublicKeys(f *testing.F) {
	f.Add("# c\n" + docClientPublic + "\n\n" + docServerPublic)
	f.Add(docClientPublic + "\r\n#x\n  \t" + docServerPublic + " ")
	f.Add("\xff" + docClientPublic[1:])
	f.Fuzz(func(t *testing.T, text string) {
		keys, err := ParsePublicKeys(strings.NewReader(text))
		if err != nil {
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("error %v does not wrap ErrKeyFile", err)
			}
			return
		}
		// Every key parsed is one of the file's non-comment lines.
		lines := 0
		for _, l := range strings.Split(text, "\n") {
			l = strings.TrimSpace(l)
			if l != "" && !strings.HasPrefix(l, "#") {
				lines++
			}
		}
		if lines != len(keys) {
			t.Fatalf("%d keys from %d key lines", len(keys), lines)
		}
		for _, k := range keys {
			if !strings.Contains(text, k.String()) {
				t.Fatalf("key %s is not in the text", k)
			}
		}
	})
}

func TestSecretKeyIsNeverPrinted(t *testing.T) {
	sec, err := ParseSecretKey(docServerSecret)
	if err != nil {
		t.Fatal(err)
	}
	s := struct{ Secret SecretKey }{sec}
	for _, out := range []string{fmt.Sprint(sec), fmt.Sprintf("%v %+v %#v %x %s %q", s, s, s, sec, sec, sec)} {
		if strings.Contains(out, docServerSecret[:8]) || strings.Contains(out, fmt.Sprintf("%x", sec[:4])) || strings.Contains(out, fmt.Sprint(sec[0])+" ") {
			t.Fatalf("secret printed: %s", out)
		}
	}
}

// TestKeyFilesRefuseFIFO: a key path set to a FIFO fails at once instead
// of blocking the start or a SIGHUP reload of the allowlist.
func TestKeyFilesRefuseFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	for name, read := range map[string]func(string) error{
		"secret key": func(p string) error { _, err := ReadSecretKeyFile(p); return err },
		"allowlist":  func(p string) error { _, err := ReadPublicKeysFile(p); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- read(path) }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrKeyFile) {
				t.Errorf("%s from a FIFO: %v, want ErrKeyFile", name, err)
			}
		case <-time.After(time.Minute): // a correctness bound: without O_NONBLOCK the open blocks for ever
			t.Fatalf("%s from a FIFO: still blocked after 10 s", name)
		}
	}
}
