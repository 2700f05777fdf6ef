package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The C example (examples/c) is a product too: a C or LabVIEW author starts
// from it. It is compiled as its README says, with warnings as errors, and
// run against a real ramanserve process with a model loaded.

// cExampleDir is examples/c relative to this package.
const cExampleDir = "../examples/c"

// msgpackCModule is the pkg-config name of msgpack-c: "msgpack-c" from
// msgpack-c 6 on (Debian trixie's libmsgpack-c-dev), "msgpack" before
// (bookworm's libmsgpack-dev).
func msgpackCModule() (string, error) {
	for _, name := range []string{"msgpack-c", "msgpack"} {
		if exec.Command("pkg-config", "--exists", name).Run() == nil {
			return name, nil
		}
	}
	return "", fmt.Errorf("pkg-config knows neither msgpack-c nor msgpack")
}

// needCToolchain returns the pkg-config modules of the C example. It skips
// the test when the compiler or the Debian dev packages are missing,
// except in CI, where `make test-examples` installs them and their absence
// is a failure.
func needCToolchain(t *testing.T) []string {
	t.Helper()
	missing := func(err error) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the C example needs cc, pkg-config, libzmq3-dev and msgpack-c in CI (make test-examples): %v", err)
		}
		t.Skipf("C toolchain not available (make test-examples installs it): %v", err)
	}
	for _, tool := range []string{"cc", "pkg-config"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(err)
		}
	}
	if err := exec.Command("pkg-config", "--exists", "libzmq").Run(); err != nil {
		missing(fmt.Errorf("pkg-config libzmq: %v", err))
	}
	mp, err := msgpackCModule()
	if err != nil {
		missing(err)
	}
	return []string{"libzmq", mp}
}

// buildCExample compiles examples/c/raman_client.c into dir, as the README
// says, with -Werror.
func buildCExample(t *testing.T, dir string, modules []string) string {
	t.Helper()
	return buildCExampleWith(t, dir, modules)
}

// buildCExampleWith is buildCExample with extra compiler flags (sanitizers).
func buildCExampleWith(t *testing.T, dir string, modules []string, extra ...string) string {
	t.Helper()
	flags, err := exec.Command("pkg-config", append([]string{"--cflags", "--libs"}, modules...)...).Output()
	if err != nil {
		t.Fatalf("pkg-config %v: %v", modules, err)
	}
	bin := filepath.Join(dir, "raman_client")
	args := append([]string{"-Wall", "-Wextra", "-Werror", "-O2"}, extra...)
	args = append(args, "-o", bin, filepath.Join(cExampleDir, "raman_client.c"))
	args = append(args, strings.Fields(string(flags))...)
	args = append(args, "-lm")
	if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// writeSpectrumFile writes an in-domain synthetic spectrum as the example
// reads it: one "wavenumber intensity" pair per line.
func writeSpectrumFile(t *testing.T, path string) {
	t.Helper()
	wn, in := testSpectrum()
	var buf bytes.Buffer
	for i := range wn {
		fmt.Fprintf(&buf, "%.17g %.17g\n", wn[i], in[i])
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestExampleC(t *testing.T) {
	modules := needCToolchain(t)
	tmp := t.TempDir()
	bin := buildCExample(t, tmp, modules)
	spectrum := filepath.Join(tmp, "spectrum.txt")
	writeSpectrumFile(t, spectrum)

	reg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(reg, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	const version = "c-example"
	writeArtifact(t, filepath.Join(reg, "models", version+".npz"), "c-example")
	p := startProcess(t, reg)
	loadVersion(t, p.client(t), version)

	// The example never waits for ever (2 s receive timeout, 3 attempts);
	// the context is a second guard against a hung test.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, p.zmq, spectrum)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("examples/c output:\n%s", stdout.String())
	if stderr.Len() > 0 {
		t.Logf("examples/c stderr:\n%s", stderr.String())
	}
	if err != nil {
		t.Errorf("raman_client %s %s: %v", p.zmq, spectrum, err)
	}

	out := stdout.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^pong: server_version=\S+ protocol_version=1 model_version=` + version + ` uptime_seconds=[0-9.]+$`),
		regexp.MustCompile(`(?m)^predict_reply: model_version=` + version + ` inference_ms=[0-9.]+$`),
		regexp.MustCompile(`(?m)^  EPA -?[0-9.]+ g/L  confidence [01]\.[0-9]{3}$`),
		regexp.MustCompile(`(?m)^  DHA -?[0-9.]+ g/L  confidence [01]\.[0-9]{3}$`),
		regexp.MustCompile(`(?m)^  DPA -?[0-9.]+ g/L  confidence [01]\.[0-9]{3}$`),
		regexp.MustCompile(`(?m)^predict_reply: error INVALID_SPECTRUM retryable=false: .+$`),
		regexp.MustCompile(`(?m)^ok$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks a line matching %s", want)
		}
	}
}
