package conformance

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"ramanserve/gen"
)

// TestFileLoadVersionExists: an import (source file) names the version
// its file will take, so a name already in the registry is 400
// VERSION_EXISTS, checked before the file is read, and the registry and
// the active model are unchanged (api/departures.md, M8).
func TestFileLoadVersionExists(t *testing.T) {
	needInProcess(t)
	a, b := twoModels(t)
	c := api(t)
	before := must(c.ListModelsWithResponse(context.Background(), nil))(t)
	// Not a model at all: the name is refused before any byte is read.
	path := filepath.Join(suite.regDir, "import", "taken-name.joblib")
	if err := os.WriteFile(path, []byte("not a pickle"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	src := gen.LoadModelRequestSource("file")
	res := must(c.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: b, Source: &src, Path: &path}))(t)
	if res.StatusCode() != 400 || res.JSON400 == nil || res.JSON400.Code != "VERSION_EXISTS" {
		t.Fatalf("import under the existing version %s: %d %s", b, res.StatusCode(), res.Body)
	}
	after := must(c.ListModelsWithResponse(context.Background(), nil))(t)
	if after.JSON200.Active == nil || *after.JSON200.Active != a || len(after.JSON200.Models) != len(before.JSON200.Models) {
		t.Errorf("the refused import changed the registry: before %s, after %s", before.Body, after.Body)
	}
}
