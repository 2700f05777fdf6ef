package conformance

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWorldWritableTokensFileBySIGHUP: against a real process, a tokens
// file others may write stops the start (exit 1, naming the file and its
// mode); once started, a SIGHUP that finds it world-writable is refused,
// logged naming the file and its mode, and the tokens in force stay.
func TestWorldWritableTokensFileBySIGHUP(t *testing.T) {
	t.Parallel() // its own process: runs beside the others
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	old, planted := newToken(t), newToken(t)
	writeTokens(t, file, tokenLine("operate", old, "console"))
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(serverBinary(t), "-http-addr", "127.0.0.1:0", "-zmq-addr", "tcp://127.0.0.1:0",
		"-registry", filepath.Join(dir, "refused"), "-auth-tokens", file).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), file) || !strings.Contains(string(out), "mode 0666") {
		t.Fatalf("start with a world-writable tokens file: %v\n%s", err, out)
	}

	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, filepath.Join(dir, "registry"), "-auth-tokens", file)
	list := func(token string) int {
		resp, _ := asToken(t, token, http.MethodGet, "http://"+p.httpAddr+"/model/list", "", nil)
		return resp.StatusCode
	}
	// What a local user could do to a world-writable file: add a token.
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(tokenLine("operate", planted, "intruder")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chmod(file, 0o646); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	failed := p.waitLogMsg(t, "SIGHUP: reload failed; what failed keeps its previous value, the rest took effect", 1)
	if msg := fmt.Sprint(failed[0]["err"]); !strings.Contains(msg, file) || !strings.Contains(msg, "mode 0646") {
		t.Errorf("reload error %q does not name the file and its mode", msg)
	}
	if got := list(old); got != http.StatusOK {
		t.Errorf("the token in force after a refused SIGHUP: %d, want 200", got)
	}
	if got := list(planted); got != http.StatusUnauthorized {
		t.Errorf("the planted token: %d, want 401", got)
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// TestHeadHealthOnAProcess: HEAD /health on a real process answers 200
// with GET's headers and no body.
func TestHeadHealthOnAProcess(t *testing.T) {
	t.Parallel()
	p := startProcess(t, t.TempDir())
	get, err := http.Get("http://" + p.httpAddr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	head, err := http.Head("http://" + p.httpAddr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusOK || head.StatusCode != get.StatusCode || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") || head.ContentLength <= 0 {
		t.Fatalf("HEAD /health: %d %v (length %d); GET: %d %v", head.StatusCode, head.Header, head.ContentLength, get.StatusCode, get.Header)
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
