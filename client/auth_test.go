package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/server"
	"ramanserve/server/auth"
)

// TestWithBearerTokenAuthenticates: against a server with -auth-tokens,
// the management client without a token reads 401 UNAUTHORIZED as
// *client.Error; with WithBearerToken every call carries the token,
// the streamed upload too (a read token gets 403 on it, an unknown
// token 401 again).
func TestWithBearerTokenAuthenticates(t *testing.T) {
	const readToken, operateToken = "read-token-of-the-dashboard", "operate-token-of-the-ci"
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(auth.FileLine(auth.Read, readToken, "dashboard")+auth.FileLine(auth.Operate, operateToken, "ci")), 0o600); err != nil {
		t.Fatal(err)
	}
	proc, err := app.Start(context.Background(), app.Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: t.TempDir(), Auth: server.AuthConfig{TokensFile: file}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		proc.Shutdown(ctx)
	}()
	base := "http://" + proc.HTTPAddr()
	ctx := context.Background()
	wantCode := func(what string, err error, status int, code string) {
		t.Helper()
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != status || ce.Code != code {
			t.Fatalf("%s: %v, want %d %s", what, err, status, code)
		}
		for _, tok := range []string{readToken, operateToken} {
			if strings.Contains(err.Error(), tok) {
				t.Fatalf("%s: the error quotes the token: %v", what, err)
			}
		}
	}
	list := func(m *client.Management) error {
		res, err := m.ListModelsWithResponse(ctx, nil)
		if err != nil {
			return err
		}
		return client.HTTPError(res.HTTPResponse, res.Body)
	}
	upload := func(m *client.Management) error {
		_, err := m.StartTraining(ctx, gen.TrainingMeta{Operator: "t"}, strings.NewReader("scan_id\n"))
		return err
	}

	anonymous := orFatal(client.NewManagement(base))(t)
	wantCode("no token", list(anonymous), 401, "UNAUTHORIZED")
	unknown := orFatal(client.NewManagement(base, client.WithBearerToken("not-a-token-of-this-server")))(t)
	wantCode("unknown token", list(unknown), 401, "UNAUTHORIZED")
	reader := orFatal(client.NewManagement(base, client.WithBearerToken(readToken)))(t)
	if err := list(reader); err != nil {
		t.Fatalf("read token, GET /model/list: %v", err)
	}
	wantCode("read token, upload", upload(reader), 403, "FORBIDDEN")
	operator := orFatal(client.NewManagement(base, client.WithBearerToken(operateToken)))(t)
	// Past authentication, the upload reaches its own checks: this CSV
	// has no spectra.
	wantCode("operate token, upload of an empty CSV", upload(operator), 400, "INVALID_CSV")
}

func orFatal[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
