package contract

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"ramanserve/evidence/predlog"
	"syscall"
	"testing"
	"time"

	"ramanserve/evidence/labstore"
	"ramanserve/inference"
	"ramanserve/platform/storeerr"
	"ramanserve/registry"
	"ramanserve/registry/store"
	"ramanserve/service/models"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/review"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		err       error
		code      Code
		status    int
		retryable bool
	}{
		{fmt.Errorf("load: %w", registry.ErrLoadInProgress), LoadInProgress, 409, true},
		{fmt.Errorf("x: %w: %w", inference.ErrModelCorrupted, inference.ErrUnsafeModel), UnsafeModel, 400, false},
		{fmt.Errorf("x: %w", inference.ErrModelCorrupted), ModelCorrupted, 400, false},
		{registry.ErrModelNotFound, ModelNotFound, 400, false},
		{registry.ErrPathNotAllowed, PathNotAllowed, 400, false},
		{inference.ErrModelNotLoaded, ModelNotLoaded, 404, false},
		{fmt.Errorf("line 3: %w", trainer.ErrInvalidCSV), InvalidCSV, 400, false},
		{trainer.ErrCSVTooLarge, PayloadTooLarge, 413, false},
		{jobs.ErrQueueFull, TrainingQueueFull, 429, true},
		// The data set alone crosses the budget: no retry helps.
		{&trainer.MemoryBudgetError{Rows: 128, Charged: 900, Need: 200, Limit: 1000}, PayloadTooLarge, 413, false},
		// Others hold the budget: the same upload may fit later.
		{&trainer.MemoryBudgetError{Rows: 0, Charged: 0, Need: 200, Limit: 1000}, ServerBusy, 503, true},
		{jobs.ErrJobNotFound, JobNotFound, 404, false},
		{fmt.Errorf("%w: 0192f0c4-5f1e-7000-8000-000000000000", predlog.ErrPredictionNotFound), PredictionNotFound, 404, false},
		{fmt.Errorf("%w: v1 is archived, not staged", registry.ErrModelStatusMismatch), ModelStatusMismatch, 409, false},
		{registry.ErrModelActive, ModelActive, 409, false},
		{fmt.Errorf("%w: re-scoring job j1 of version v1 is running", models.ErrModelBusy), ModelBusy, 409, true},
		{registry.ErrReservedVersion, InvalidRequest, 400, false},
		{jobs.ErrJobFinished, JobFinished, 409, false},
		{jobs.ErrInvalidCursor, InvalidCursor, 400, false},
		{jobs.ErrCancelled, Cancelled, 409, false},
		{fmt.Errorf("%w: preprocessing[1].window 16 must be odd", trainer.ErrInvalidOptions), InvalidTrainingOptions, 400, false},
		{fmt.Errorf("%w: savgol_filter mode 'nearest'", inference.ErrModelUnsupported), ModelUnsupported, 400, false},
		{jobs.ErrJobNotDone, JobNotDone, 409, false},
		{review.ErrNoTrainingRecord, NoTrainingRecord, 409, false},
		{New(MissingPart, 0, "no csv"), MissingPart, 400, false},
		{errors.New("disk on fire"), InternalError, 500, false},
		// The registry's wrapping: sentinel, then the write's *PathError.
		{fmt.Errorf("%w: write index.json: %w", store.ErrRegistry, &fs.PathError{Op: "write", Path: "index.json", Err: syscall.ENOSPC}), InsufficientStorage, 507, true},
		{fmt.Errorf("%w: %w", store.ErrRegistry, &fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}), InsufficientStorage, 507, true},
		{&fs.PathError{Op: "write", Path: "x", Err: syscall.EDQUOT}, InsufficientStorage, 507, true},
		{fmt.Errorf("reconcile: store lab results: %w", labstore.ErrFull), InsufficientStorage, 507, true},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, InternalError, 500, false},
		// A store that cannot be reached, whatever wraps it.
		{fmt.Errorf("%w: read index: %w: dial tcp: connection refused", store.ErrRegistry, storeerr.ErrUnavailable), StoreUnavailable, 503, true},
		{fmt.Errorf("job j1: %w: %w", jobs.ErrJobNotFound, storeerr.ErrUnavailable), StoreUnavailable, 503, true},
	}
	for _, tc := range cases {
		got := Classify(tc.err)
		if got.Code != tc.code || got.Status != tc.status || got.Retryable != tc.retryable {
			t.Errorf("Classify(%v) = %+v, want %s %d %v", tc.err, got, tc.code, tc.status, tc.retryable)
		}
	}
}

// TestRetryableIsOneTable: both channels read retryability from the same
// table; INTERNAL_ERROR is final on both, SERVER_BUSY retryable on both.
func TestRetryableIsOneTable(t *testing.T) {
	for code, want := range map[Code]bool{
		InternalError: false, ServerBusy: true, LoadInProgress: true, TrainingQueueFull: true,
		InsufficientStorage: true, ShuttingDown: true, ModelBusy: true, ModelActive: false, InvalidSpectrum: false, MalformedMessage: false,
		MessageTooLarge: false, ModelNotLoaded: false, UnknownType: false, UnsupportedVersion: false,
	} {
		if Retryable(code) != want || Errorf(code, "x").Retryable() != want {
			t.Errorf("%s: retryable %v, want %v", code, Retryable(code), want)
		}
	}
	if c := Classify(context.DeadlineExceeded); c.Retryable != Retryable(c.Code) {
		t.Errorf("deadline: %+v does not follow the table", c)
	}
}

// TestRetryAfterIsTheContracts: the waits the one table gives are those
// api/openapi.yaml documents for each retryable code, and a final code
// has none.
func TestRetryAfterIsTheContracts(t *testing.T) {
	want := map[Code]time.Duration{
		LoadInProgress:      time.Second,
		TrainingQueueFull:   5 * time.Second,
		ModelBusy:           5 * time.Second,
		ServerBusy:          5 * time.Second,
		InsufficientStorage: 30 * time.Second,
		ShuttingDown:        0,
		InvalidRequest:      0,
		InternalError:       0,
	}
	for code, wait := range want {
		if got := RetryAfter(code); got != wait {
			t.Errorf("RetryAfter(%s) = %v, want %v", code, got, wait)
		}
		if wait > 0 && !Retryable(code) {
			t.Errorf("%s has a Retry-After but is not retryable", code)
		}
	}
	if got := Classify(fmt.Errorf("wrapped: %w", models.ErrModelBusy)); got.RetryAfter != 5*time.Second || !got.Retryable {
		t.Errorf("Classify(ErrModelBusy) = %+v", got)
	}
}
