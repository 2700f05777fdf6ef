package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"ramanserve/client"
	"ramanserve/gen"
)

// TestTrainingBodyLeavesOutNilParts: a body without its csv part is
// refused with MISSING_PART, read back as *client.Error.
func TestTrainingBodyLeavesOutNilParts(t *testing.T) {
	m, err := client.NewManagement(managementURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	contentType, body := client.TrainingBody([]byte(`{"operator":"x"}`), nil)
	defer body.Close()
	res, err := m.StartTrainingWithBodyWithResponse(context.Background(), contentType, body)
	if err != nil {
		t.Fatal(err)
	}
	var ce *client.Error
	if err := client.HTTPError(res.HTTPResponse, res.Body); !errors.As(err, &ce) || ce.Code != "MISSING_PART" || ce.Status != 400 || ce.Retryable {
		t.Fatalf("body without csv: %v", err)
	}
}

// TestStartTrainingReportsTheReadersError: the CSV is streamed, so a
// reader that fails mid-way fails the upload instead of sending half a
// data set as a whole one.
func TestStartTrainingReportsTheReadersError(t *testing.T) {
	m, err := client.NewManagement(managementURL)
	if err != nil {
		t.Fatal(err)
	}
	csv := &failingReader{r: strings.NewReader("scan_id,wn_0\n1,2\n")}
	if _, err := m.StartTraining(context.Background(), gen.TrainingMeta{Operator: "t"}, csv); err == nil {
		t.Fatal("an upload whose reader failed was accepted")
	}
}

type failingReader struct{ r *strings.Reader }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.r.Len() == 0 {
		return 0, errors.New("disk read failed")
	}
	return f.r.Read(p)
}
