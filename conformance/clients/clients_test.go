package clients

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/server"
	"ramanserve/server/auth"
	"ramanserve/trainer/synth"
)

// trainingRows is the size of the smoke programs' training upload: enough
// for 10-fold cross-validation, small enough to train in well under a second.
const trainingRows = 40

// generatedClient is one generator's client: how to generate it into dir,
// compile it there, and the command that runs its smoke program.
type generatedClient struct {
	name     string
	generate func(t *testing.T, dir string)
	compile  func(t *testing.T, dir string)
	smoke    func(dir, base, csv string) *exec.Cmd
}

// TestGeneratedClients prints, per client, "generated", "compiled", one
// line per call of its smoke program and "smoke: N calls, 0 errors". The
// server runs with -auth-tokens: each smoke program first shows a call
// without its token refused 401, then makes every call with the token
// set in its client's own way (the generated SDK's auth option for
// hey-api, the client's headers for openapi-fetch, a request editor for
// oapi-codegen's Go client) and finds the token's name in the lineage.
func TestGeneratedClients(t *testing.T) {
	if os.Getenv("RAMANSERVE_TEST_CLIENTS") == "" {
		t.Skip("run by `make test-clients`, which installs the pinned npm packages first")
	}
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	csv := filepath.Join(scratch, "training.csv")
	writeTrainingCSV(t, csv)

	for _, c := range []generatedClient{goClient(root), openapiFetchClient(root), heyAPIClient(root)} {
		t.Run(c.name, func(t *testing.T) {
			// The clients build and run at once: each is mostly a
			// compiler's single thread, and every line they print names
			// its client.
			t.Parallel()
			dir := filepath.Join(scratch, c.name)
			c.generate(t, dir)
			fmt.Printf("%s: generated\n", c.name)
			c.compile(t, dir)
			fmt.Printf("%s: compiled\n", c.name)
			runSmoke(t, c, dir, startServer(t), csv)
		})
	}
}

// runSmoke runs a smoke program against the server at base, prints its
// lines prefixed with the client's name, and fails the test unless it
// closes with "smoke: N calls, 0 errors".
func runSmoke(t *testing.T, c generatedClient, dir, base, csv string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := c.smoke(dir, base, csv)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RAMANSERVE_TOKEN="+smokeToken, "RAMANSERVE_TOKEN_NAME="+smokeTokenName)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stop()
	last := ""
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		last = sc.Text()
		fmt.Printf("%s: %s\n", c.name, last)
	}
	waitErr := cmd.Wait()
	if m := closingLine.FindStringSubmatch(last); m == nil || m[2] != "0" || waitErr != nil {
		t.Errorf("%s smoke: %v, last line %q\n%s", c.name, waitErr, last, stderr.String())
	}
}

var closingLine = regexp.MustCompile(`^smoke: (\d+) calls, (\d+) errors$`)

// The smoke programs' operate token and its name in the tokens file.
const (
	smokeToken     = "smoke-operate-token-7f3c9a"
	smokeTokenName = "smoke-client"
)

// startServer starts an in-process server on loopback with an empty
// temporary registry and authentication on (smokeToken, role operate),
// and returns its HTTP base URL.
func startServer(t *testing.T) string {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(auth.FileLine(auth.Operate, smokeToken, smokeTokenName)), 0o600); err != nil {
		t.Fatal(err)
	}
	proc, err := app.Start(context.Background(), app.Config{
		HTTPAddr:    "127.0.0.1:0",
		ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: t.TempDir(),
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Auth:        server.AuthConfig{TokensFile: tokens},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := proc.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return "http://" + proc.HTTPAddr()
}

func writeTrainingCSV(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := synth.New(synth.Config{Seed: 10}).WriteCSV(context.Background(), f, trainingRows); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// goClient: oapi-codegen v2.8.2 (the tool in go.mod) with its defaults,
// `-generate types,client`, into the package ramanapi of a scratch module
// holding testdata/go; compiled again with skip-prune, where the channel's
// message types are kept and testdata/go/channel.go uses them.
func goClient(root string) generatedClient {
	spec := filepath.Join(root, "api", "openapi.yaml")
	gen := func(t *testing.T, dir, generate string) {
		copyFiles(t, filepath.Join(root, "conformance", "clients", "testdata", "go"), dir, "main.go", "go.mod", "go.sum")
		if err := os.MkdirAll(filepath.Join(dir, "ramanapi"), 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, root, "go", "tool", "oapi-codegen", "-generate", generate, "-package", "ramanapi",
			"-o", filepath.Join(dir, "ramanapi", "api.gen.go"), spec)
	}
	return generatedClient{
		name: "go-oapi-codegen",
		generate: func(t *testing.T, dir string) {
			gen(t, dir, "types,client")
			gen(t, dir+"-skip-prune", "types,client,skip-prune")
			copyFiles(t, filepath.Join(root, "conformance", "clients", "testdata", "go"), dir+"-skip-prune", "channel.go")
		},
		compile: func(t *testing.T, dir string) {
			run(t, dir, "go", "build", "-o", "smoke", ".")
			run(t, dir+"-skip-prune", "go", "build", "-o", "smoke", ".")
		},
		smoke: func(dir, base, csv string) *exec.Cmd {
			return exec.Command(filepath.Join(dir, "smoke"), base, csv)
		},
	}
}

// openapiFetchClient: openapi-typescript types (with its documented
// Blob transform for `format: binary`) and openapi-fetch, compiled with
// tsc --strict.
func openapiFetchClient(root string) generatedClient {
	ts := filepath.Join(root, "conformance", "clients", "testdata", "ts")
	return generatedClient{
		name: "ts-openapi-fetch",
		generate: func(t *testing.T, dir string) {
			tsDir(t, ts, dir, "openapi-fetch")
			run(t, ts, "node", "gen-openapi-typescript.mjs", filepath.Join(root, "api", "openapi.yaml"), filepath.Join(dir, "schema.ts"))
		},
		compile: tsc,
		smoke:   nodeSmoke,
	}
}

// heyAPIClient: @hey-api/openapi-ts with its fetch client and defaults,
// compiled with tsc --strict.
func heyAPIClient(root string) generatedClient {
	ts := filepath.Join(root, "conformance", "clients", "testdata", "ts")
	return generatedClient{
		name: "ts-hey-api",
		generate: func(t *testing.T, dir string) {
			tsDir(t, ts, dir, "hey-api")
			run(t, ts, filepath.Join(ts, "node_modules", ".bin", "openapi-ts"), "--silent", "--no-log-file",
				"-i", filepath.Join(root, "api", "openapi.yaml"), "-o", filepath.Join(dir, "api"), "-c", "@hey-api/client-fetch")
		},
		compile: tsc,
		smoke:   nodeSmoke,
	}
}

// nodeSmoke runs a compiled TypeScript smoke program against base.
func nodeSmoke(dir, base, csv string) *exec.Cmd {
	return exec.Command("node", filepath.Join(dir, "out", "smoke.js"), base, csv)
}

// tsDir lays out a TypeScript scratch directory: the shared tsconfig and
// helpers, the client's smoke sources, and the installed node_modules.
func tsDir(t *testing.T, ts, dir, client string) {
	t.Helper()
	copyFiles(t, ts, dir, "tsconfig.json", "common.ts")
	copyFiles(t, filepath.Join(ts, client), dir, "smoke.ts", "channel.ts")
	modules := filepath.Join(ts, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, ".package-lock.json")); err != nil {
		t.Fatalf("npm packages not installed (make test-clients runs npm ci in %s): %v", ts, err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
}

func tsc(t *testing.T, dir string) {
	t.Helper()
	run(t, dir, filepath.Join(dir, "node_modules", ".bin", "tsc"), "-p", "tsconfig.json", "--strict")
}

// run runs a generator or compiler in dir and fails the test with its
// output when it fails.
func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func copyFiles(t *testing.T, from, to string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
