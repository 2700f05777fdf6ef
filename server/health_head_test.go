package server

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"ramanserve/server/auth"
)

// TestHeadHealth: HEAD /health, over a real connection, answers as GET
// /health does (status and headers) without a body, under the same
// authentication: open by default, a token needed with -auth-health.
func TestHeadHealth(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(auth.FileLine(auth.Read, "probe-token", "probe")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		auth  AuthConfig
		token string
		want  int
	}{
		{"no authentication", AuthConfig{}, "", http.StatusOK},
		{"tokens, health open", AuthConfig{TokensFile: tokens}, "", http.StatusOK},
		{"-auth-health without a token", AuthConfig{TokensFile: tokens, Health: true}, "", http.StatusUnauthorized},
		{"-auth-health with a token", AuthConfig{TokensFile: tokens, Health: true}, "probe-token", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, err := startProcess(context.Background(), processConfig{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
				RegistryDir: filepath.Join(t.TempDir(), "registry"), Auth: tc.auth})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Shutdown(context.Background())
			ask := func(method string) (*http.Response, []byte) {
				t.Helper()
				req, _ := http.NewRequest(method, "http://"+app.HTTPAddr()+"/health", nil)
				if tc.token != "" {
					req.Header.Set("Authorization", "Bearer "+tc.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp, body
			}
			get, getBody := ask(http.MethodGet)
			head, headBody := ask(http.MethodHead)
			if get.StatusCode != tc.want || head.StatusCode != get.StatusCode {
				t.Fatalf("GET %d, HEAD %d; want both %d", get.StatusCode, head.StatusCode, tc.want)
			}
			if len(headBody) != 0 || len(getBody) == 0 {
				t.Errorf("HEAD body %q, GET body %d bytes: want none and some", headBody, len(getBody))
			}
			for name := range get.Header {
				switch name {
				case "Date", "X-Request-Id":
					continue // of each exchange
				}
				if head.Header.Get(name) == "" {
					t.Errorf("HEAD has no %s header (GET: %q)", name, get.Header.Get(name))
				}
			}
			for name := range head.Header {
				if get.Header.Get(name) == "" {
					t.Errorf("HEAD has a %s header GET has not: %q", name, head.Header.Get(name))
				}
			}
			for _, name := range []string{"Content-Type", "Cache-Control", "WWW-Authenticate"} {
				if head.Header.Get(name) != get.Header.Get(name) {
					t.Errorf("%s: HEAD %q, GET %q", name, head.Header.Get(name), get.Header.Get(name))
				}
			}
		})
	}
}
