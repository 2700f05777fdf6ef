package clients

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestTypeScriptPackage: the console package clients/typescript. Its
// committed types are what its generator makes of api/openapi.yaml
// today; the package and its smoke program compile with tsc --strict; and
// the smoke program, run against an in-process server with
// authentication on, ends "smoke: N calls, 0 errors": a call without the
// token refused, health, an unknown version's axis (404 MODEL_NOT_FOUND
// as ApiError), a refused and an accepted training upload through the
// multipart helper, the job followed to done, the load, the model info
// and the axis.
func TestTypeScriptPackage(t *testing.T) {
	if os.Getenv("RAMANSERVE_TEST_CLIENTS") == "" {
		t.Skip("run by `make test-clients`, which installs the pinned npm packages first")
	}
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(root, "clients", "typescript")
	modules := filepath.Join(pkg, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, ".package-lock.json")); err != nil {
		t.Fatalf("npm packages not installed (make test-clients runs npm ci in %s): %v", pkg, err)
	}
	scratch := t.TempDir()

	fresh := filepath.Join(scratch, "schema.ts")
	run(t, pkg, "node", "scripts/generate.mjs", filepath.Join(root, "api", "openapi.yaml"), fresh)
	committed, err := os.ReadFile(filepath.Join(pkg, "src", "schema.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if generated, err := os.ReadFile(fresh); err != nil || !bytes.Equal(committed, generated) {
		t.Fatalf("clients/typescript/src/schema.ts is stale (%v): run `npm run generate` there and commit it", err)
	}
	fmt.Println("ts-package: src/schema.ts matches api/openapi.yaml")

	// Compiled outside the checkout; the output is an ES module package
	// that resolves openapi-fetch from the package's node_modules.
	lib, test := filepath.Join(scratch, "dist"), filepath.Join(scratch, "smoke")
	tsc := filepath.Join(modules, ".bin", "tsc")
	run(t, pkg, tsc, "-p", "tsconfig.json", "--strict", "--outDir", lib)
	run(t, pkg, tsc, "-p", "tsconfig.test.json", "--strict", "--outDir", test)
	if err := os.WriteFile(filepath.Join(test, "package.json"), []byte(`{"type": "module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(test, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"index.js", "index.d.ts", "schema.d.ts"} {
		if _, err := os.Stat(filepath.Join(lib, f)); err != nil {
			t.Fatalf("tsc wrote no %s: %v", f, err)
		}
	}
	fmt.Println("ts-package: compiled with tsc --strict")

	csv := filepath.Join(scratch, "training.csv")
	writeTrainingCSV(t, csv)
	runSmoke(t, generatedClient{name: "ts-package", smoke: func(dir, base, csv string) *exec.Cmd {
		return exec.Command("node", filepath.Join(dir, "test", "smoke.js"), base, csv)
	}}, test, startServer(t), csv)
}
