package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"

	"ramanserve/gen"
)

// Management is the management channel's client: the client oapi-codegen
// generates from api/openapi.yaml (every endpoint, typed answers in
// JSON200, JSON404, ...), plus StartTraining, the training upload typed
// and streamed. Turn an answer outside 2xx into *Error with HTTPError.
type Management struct {
	*gen.ClientWithResponses
}

// NewManagement returns a client of the server at base, e.g.
// "http://localhost:5556". Options are the generated client's
// (gen.WithHTTPClient, gen.WithRequestEditorFn).
func NewManagement(base string, opts ...gen.ClientOption) (*Management, error) {
	c, err := gen.NewClientWithResponses(strings.TrimRight(base, "/"), opts...)
	if err != nil {
		return nil, err
	}
	return &Management{ClientWithResponses: c}, nil
}

// StartTraining uploads a training set (POST /training/start): meta as the
// JSON meta part, csv streamed into the csv part as the request is sent, so
// a large CSV is never held in memory. It returns the accepted job, or the
// server's refusal as *Error (code, message, retryable, HTTP status), or
// the transport's error (csv's read error among them).
func (m *Management) StartTraining(ctx context.Context, meta gen.TrainingMeta, csv io.Reader, reqEditors ...gen.RequestEditorFn) (*gen.TrainingJobAccepted, error) {
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	contentType, body := TrainingBody(metaJSON, csv)
	defer body.Close() // ends the writing goroutine if the request never read the body
	res, err := m.StartTrainingWithBodyWithResponse(ctx, &gen.StartTrainingParams{}, contentType, body, reqEditors...)
	if err != nil {
		return nil, err
	}
	if err := HTTPError(res.HTTPResponse, res.Body); err != nil {
		return nil, err
	}
	if res.JSON202 == nil {
		return nil, fmt.Errorf("POST /training/start: status %d without a TrainingJobAccepted", res.StatusCode())
	}
	return res.JSON202, nil
}

// TrainingBody returns the multipart/form-data body of a training upload
// and its Content-Type: a meta part (application/json) holding meta as
// given, then a csv part read from csv while the body is read. A nil meta
// or csv leaves that part out, which the server refuses with MISSING_PART:
// it is there for tools that test the server's checks; StartTraining is
// the typed call. The body is written by a goroutine through a pipe; it
// ends when the body has been read to its end or closed, so the caller
// must close body (an http.Request's transport does). Close returns once
// that goroutine has ended: after it, csv is not read again (a server may
// answer, 429 say, while the body is still being sent), so the caller may
// close or reuse csv. A Read of csv under way when Close is called delays
// it until that Read returns.
func TrainingBody(meta []byte, csv io.Reader) (contentType string, body io.ReadCloser) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(writeTrainingParts(mw, meta, csv))
	}()
	return mw.FormDataContentType(), &trainingBody{PipeReader: pr, written: done}
}

// trainingBody is the reading end of a training upload's pipe; written is
// closed when the goroutine writing the other end has returned.
type trainingBody struct {
	*io.PipeReader
	written <-chan struct{}
}

// Close stops the writer (its next write fails) and waits for it to end.
func (b *trainingBody) Close() error {
	err := b.PipeReader.Close()
	<-b.written
	return err
}

func writeTrainingParts(mw *multipart.Writer, meta []byte, csv io.Reader) error {
	if meta != nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="meta"`)
		h.Set("Content-Type", "application/json")
		w, err := mw.CreatePart(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(meta); err != nil {
			return err
		}
	}
	if csv != nil {
		w, err := mw.CreateFormFile("csv", "training.csv")
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, csv); err != nil {
			return err
		}
	}
	return mw.Close()
}

// IdempotencyKey sends key as the Idempotency-Key of one training upload
// (a request editor for StartTraining): a retry with the same key and the
// same upload gets the first attempt's job, never a second one. Use a
// new key, such as a UUID, for each new upload.
func IdempotencyKey(key string) gen.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Idempotency-Key", key)
		return nil
	}
}
