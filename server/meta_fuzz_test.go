package server

import (
	"encoding/json"
	"errors"
	"testing"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// FuzzParseMeta: the meta part's parser never panics; whatever it refuses
// is INVALID_METADATA; whatever it accepts has only TrainingMeta's fields
// at the top level and annotations within their bound, and parses again,
// unchanged, from its own encoding.
func FuzzParseMeta(f *testing.F) {
	doc, err := gen.GetSwagger()
	if err != nil {
		f.Fatal(err)
	}
	a := &API{metaSchema: doc.Components.Schemas["TrainingMeta"].Value}
	for _, seed := range []string{
		`{"operator":"op"}`,
		`{"operator":"op","cv_fold":5}`,
		`{"operator":"op","cv_folds":50,"cv_segments":"consecutive","component_rule":"randomization"}`,
		`{"operator":"op","annotations":{"form":{"a":[1,2,null]},"t":"x"}}`,
		`{"operator":"op","annotations":[]}`,
		`{"operator":"op","component_rule":"elbow"}`,
		`[1]`, `null`, `{"operator":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		meta, err := a.parseMeta(b)
		if err != nil {
			var ce *contract.Error
			if !errors.As(err, &ce) || ce.Code != contract.InvalidMetadata {
				t.Fatalf("refused with %v, want INVALID_METADATA", err)
			}
			return
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object: %v", b, err)
		}
		for k := range top {
			if _, ok := a.metaSchema.Properties[k]; !ok {
				t.Fatalf("accepted the unknown field %q", k)
			}
		}
		if ann, err := compactAnnotations(meta.Annotations); err != nil || len(ann) > maxAnnotationBytes {
			t.Fatalf("accepted annotations of %d bytes (%v)", len(ann), err)
		}
		again, err := json.Marshal(meta)
		if err != nil {
			t.Fatal(err)
		}
		meta2, err := a.parseMeta(again)
		if err != nil {
			t.Fatalf("its own encoding %s is refused: %v", again, err)
		}
		if b2, _ := json.Marshal(meta2); string(b2) != string(again) {
			t.Fatalf("round trip changed %s into %s", again, b2)
		}
	})
}
