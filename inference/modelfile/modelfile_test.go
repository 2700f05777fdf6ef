package modelfile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"ramanserve/inference"
	"ramanserve/inference/modelfile"
)

// TestReadRefusesWhatItCannotRead: an unknown kind of file, and bytes that
// are neither an artifact nor a pickle, are ErrModelCorrupted.
func TestReadRefusesWhatItCannotRead(t *testing.T) {
	junk := strings.NewReader("not a model")
	for _, ext := range []string{".pkl", ".npz", ".joblib"} {
		_, err := modelfile.Read(context.Background(), junk, junk.Size(), ext, "")
		if !errors.Is(err, inference.ErrModelCorrupted) {
			t.Errorf("%s: %v, want ErrModelCorrupted", ext, err)
		}
	}
}
