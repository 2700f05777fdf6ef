// Package contract maps domain errors to the error codes of the interface
// contract (api/openapi.yaml and api/messages.md). It is the one place where
// that mapping lives; the HTTP handlers and the prediction channel both use it.
package contract

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"ramanserve/evidence/batches"
	"ramanserve/evidence/labstore"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
	"ramanserve/platform/storeerr"
	"ramanserve/registry"
	"ramanserve/server/report"
	evidencesvc "ramanserve/service/evidence"
	"ramanserve/service/models"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/review"
)

// Code is a machine-readable error code of the contract.
type Code string

// Codes of the management channel (see the table in api/openapi.yaml).
const (
	InvalidRequest       Code = "INVALID_REQUEST"
	MalformedJSON        Code = "MALFORMED_JSON"
	ModelNotFound        Code = "MODEL_NOT_FOUND"
	ModelCorrupted       Code = "MODEL_CORRUPTED"
	UnsafeModel          Code = "UNSAFE_MODEL"
	ModelTargetsUnknown  Code = "MODEL_TARGETS_UNKNOWN"
	PathNotAllowed       Code = "PATH_NOT_ALLOWED"
	VersionExists        Code = "VERSION_EXISTS"
	InvalidCSV           Code = "INVALID_CSV"
	InvalidMetadata      Code = "INVALID_METADATA"
	MissingPart          Code = "MISSING_PART"
	NotFound             Code = "NOT_FOUND"
	JobNotFound          Code = "JOB_NOT_FOUND"
	MethodNotAllowed     Code = "METHOD_NOT_ALLOWED"
	LoadInProgress       Code = "LOAD_IN_PROGRESS"
	PayloadTooLarge      Code = "PAYLOAD_TOO_LARGE"
	RequestTimeout       Code = "REQUEST_TIMEOUT"
	UnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE"
	TrainingQueueFull    Code = "TRAINING_QUEUE_FULL"
	TrainingDiverged     Code = "TRAINING_DIVERGED"
	Interrupted          Code = "INTERRUPTED"
	NotImplemented       Code = "NOT_IMPLEMENTED"
	InternalError        Code = "INTERNAL_ERROR"
	// InsufficientStorage: the registry's disk cannot take a write (full,
	// read-only or over quota) or did not answer the write probe in time.
	// Retryable once an operator frees space or the disk answers.
	InsufficientStorage Code = "INSUFFICIENT_STORAGE"
	// ServerBusy: a shared resource is momentarily taken. On the
	// management channel: no regular connection slot could be freed (each
	// had a request in progress or had just been opened), and this
	// connection (from the health reserve) may only ask GET /health.
	// Or: a training upload's data set would fit the training memory
	// budget, but other uploads and jobs hold it now.
	// On the prediction channel: a message over 64 KiB arrived while the
	// transport's shared buffer for large messages was in use.
	ServerBusy Code = "SERVER_BUSY"
	// StoreUnavailable: the shared store (the fleet's PostgreSQL database)
	// cannot be reached now; the hot path keeps serving, management
	// routes that need the store answer this until it is back.
	StoreUnavailable Code = "STORE_UNAVAILABLE"
	// ShuttingDown: the server stopped while the request was in progress
	// (an upload still streaming in); retry against the restarted server.
	ShuttingDown Code = "SHUTTING_DOWN"
	// ModelStatusMismatch: a load names a version that exists, but with
	// another status than its source (409; the message names the status).
	ModelStatusMismatch Code = "MODEL_STATUS_MISMATCH"
	// ModelActive: DELETE /model/{version} of the active version (409).
	ModelActive Code = "MODEL_ACTIVE"
	// PredictionNotFound: GET /predictions/{predictionId} of an id the
	// prediction log holds no record of (404).
	PredictionNotFound Code = "PREDICTION_NOT_FOUND"
	// ModelBusy: DELETE /model/{version} while a re-scoring job for the
	// version is queued or running (409; the message names the job).
	// Retryable once the job ends.
	ModelBusy Code = "MODEL_BUSY"
	// JobFinished: cancelling a job that already ended (409).
	JobFinished Code = "JOB_FINISHED"
	// InvalidCursor: GET /training with a cursor this server did not issue (400).
	InvalidCursor Code = "INVALID_CURSOR"
	// InvalidTrainingOptions: TrainingMeta's training options cannot apply
	// to this upload or axis (400; the message names the field).
	InvalidTrainingOptions Code = "INVALID_TRAINING_OPTIONS"
	// ModelUnsupported: an import that is safe to read asks for something
	// the server cannot reproduce exactly (400).
	ModelUnsupported Code = "MODEL_UNSUPPORTED"
	// JobNotDone: GET /training/{jobId}/report of a job with no model (409).
	JobNotDone Code = "JOB_NOT_DONE"
	// NoTrainingRecord: GET /model/{version}/review of an imported or
	// adopted model, whose file keeps no record of its training (409).
	NoTrainingRecord Code = "NO_TRAINING_RECORD"
	// Unauthorized: authentication is on (-auth-tokens) and the request has
	// no bearer token, or one the server does not know (401, with
	// WWW-Authenticate).
	Unauthorized Code = "UNAUTHORIZED"
	// Forbidden: the token is known but its role does not cover the
	// operation (403).
	Forbidden Code = "FORBIDDEN"
	// ShadowIsActive: PUT /model/shadow names the active version (409).
	ShadowIsActive Code = "SHADOW_IS_ACTIVE"
	// NoLoggedSpectra: a re-scoring job needs logged spectra (-log-spectra)
	// in its range, and there are none (409).
	NoLoggedSpectra Code = "NO_LOGGED_SPECTRA"
	// InvalidLabResults: a posted lab record cannot be parsed (400; the
	// message names the record and field).
	InvalidLabResults Code = "INVALID_LAB_RESULTS"
	// BatchNotFound: a batch route names a batch the prediction log holds
	// no spectrum of (404).
	BatchNotFound Code = "BATCH_NOT_FOUND"
	// ReferenceBatchesFull: marking one more reference batch would pass
	// batches.MaxReferences (409); unmark one first.
	ReferenceBatchesFull Code = "REFERENCE_BATCHES_FULL"
	// PreconditionFailed: POST /model/load with an If-Match or an
	// expected_active that no longer holds (412; the message names the
	// active version). Final: read the registry again and decide afresh.
	PreconditionFailed Code = "PRECONDITION_FAILED"
	// IdempotencyKeyReused: POST /training/start with an Idempotency-Key
	// used for a request with another body (422).
	IdempotencyKeyReused Code = "IDEMPOTENCY_KEY_REUSED"
	// IdempotencyKeyInUse: another request holds the Idempotency-Key and
	// has not recorded its job yet (409); retryable.
	IdempotencyKeyInUse Code = "IDEMPOTENCY_KEY_IN_USE"
	// NotReady: GET /readyz while the server cannot serve (503, with the
	// reasons); retryable.
	NotReady Code = "NOT_READY"
	// Cancelled is the error code of a job ended by
	// POST /training/{jobId}/cancel (in the job record, not an HTTP answer).
	Cancelled Code = "CANCELLED"
)

// Codes of the prediction channel (see api/messages.md, whose table gives
// the exact condition of each). MODEL_NOT_LOADED is also answered by
// GET /model/info with no model; SERVER_BUSY and INTERNAL_ERROR are shared
// with the management channel (above).
const (
	// ModelNotLoaded: predict or model_info while no model is active.
	ModelNotLoaded Code = "MODEL_NOT_LOADED"
	// InvalidSpectrum: the predict body is unusable (missing or
	// wrong-typed field, non-numeric or non-finite element, empty or
	// unequal arrays, too many points) or the model rejects the spectrum as
	// malformed.
	InvalidSpectrum Code = "INVALID_SPECTRUM"
	// SpectrumOutOfRange: the spectrum is well formed but the model
	// cannot be applied to it (axis mismatch, saturation).
	SpectrumOutOfRange Code = "SPECTRUM_OUT_OF_RANGE"
	// UnsupportedVersion: v is an integer other than 1.
	UnsupportedVersion Code = "UNSUPPORTED_VERSION"
	// UnknownType: type is not ping, predict or model_info.
	UnknownType Code = "UNKNOWN_TYPE"
	// MalformedMessage: the frame is not one MessagePack map, is
	// truncated, has trailing bytes, repeats an envelope key, or an envelope
	// field (v, id, type, ts, body) is missing or has the wrong type; also a
	// request with other than exactly one body frame.
	MalformedMessage Code = "MALFORMED_MESSAGE"
	// MessageTooLarge: the transport refused a message above the
	// configured maximum size; its content was never read.
	MessageTooLarge Code = "MESSAGE_TOO_LARGE"
)

// Error is an error that already carries its contract code, for failures
// detected in the transport layer itself (validation, routing, parts, and
// the prediction channel's decoding). It is the error object of both
// channels: its retryable flag is not stored but read from the one table,
// Retryable(Code), so the two channels cannot disagree about a code.
type Error struct {
	Code    Code
	Status  int // HTTP status; 0 means the code's default (unused on the prediction channel)
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// New builds a coded error.
func New(code Code, status int, message string) *Error {
	return &Error{Code: code, Status: status, Message: message}
}

// Errorf builds a coded error with the code's default status and a
// formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Retryable reports whether a client may retry the same request unchanged,
// on either channel.
func (e *Error) Retryable() bool { return Retryable(e.Code) }

// Classified is the contract view of an error.
type Classified struct {
	Code       Code
	Status     int // HTTP status
	Retryable  bool
	RetryAfter time.Duration // 0: no Retry-After
}

// domainCodes lists, in order of precedence, which domain sentinel maps to
// which code and HTTP status. The unsafe-model and targets sentinels come
// before ErrModelCorrupted because readers may wrap both.
var domainCodes = []struct {
	err    error
	code   Code
	status int
}{
	// First: a store that cannot be reached says nothing about the
	// request, whatever the domain error wrapping it.
	{storeerr.ErrUnavailable, StoreUnavailable, http.StatusServiceUnavailable},
	{registry.ErrLoadInProgress, LoadInProgress, http.StatusConflict},
	{inference.ErrUnsafeModel, UnsafeModel, http.StatusBadRequest},
	{inference.ErrModelTargets, ModelTargetsUnknown, http.StatusBadRequest},
	{inference.ErrModelUnsupported, ModelUnsupported, http.StatusBadRequest},
	{registry.ErrPathNotAllowed, PathNotAllowed, http.StatusBadRequest},
	{registry.ErrVersionExists, VersionExists, http.StatusBadRequest},
	{registry.ErrModelStatusMismatch, ModelStatusMismatch, http.StatusConflict},
	{registry.ErrPreconditionFailed, PreconditionFailed, http.StatusPreconditionFailed},
	{jobs.ErrKeyReused, IdempotencyKeyReused, http.StatusUnprocessableEntity},
	{jobs.ErrKeyInUse, IdempotencyKeyInUse, http.StatusConflict},
	{registry.ErrModelActive, ModelActive, http.StatusConflict},
	{models.ErrModelBusy, ModelBusy, http.StatusConflict},
	{registry.ErrShadowIsActive, ShadowIsActive, http.StatusConflict},
	{jobs.ErrNoLoggedSpectra, NoLoggedSpectra, http.StatusConflict},
	// A lab post's refusals all wrap ErrInvalidLabRecords; a JSON post
	// that is not JSON, or not an array of LabResult, is answered as any
	// other body outside the contract.
	{reconcile.ErrMalformedJSON, MalformedJSON, http.StatusBadRequest},
	{reconcile.ErrJSONSchema, InvalidRequest, http.StatusBadRequest},
	{reconcile.ErrTooLarge, PayloadTooLarge, http.StatusRequestEntityTooLarge},
	{reconcile.ErrInvalidLabRecords, InvalidLabResults, http.StatusBadRequest},
	{reconcile.ErrRangeTooLarge, InvalidRequest, http.StatusBadRequest},
	{models.ErrInvalidRange, InvalidRequest, http.StatusBadRequest},
	{models.ErrExportFormat, InvalidRequest, http.StatusBadRequest},
	{report.ErrScoresNotInModel, InvalidRequest, http.StatusBadRequest},
	{evidencesvc.ErrUnknownVersion, ModelNotFound, http.StatusNotFound},
	{batches.ErrBatchNotFound, BatchNotFound, http.StatusNotFound},
	{batches.ErrReferencesFull, ReferenceBatchesFull, http.StatusConflict},
	{labstore.ErrFull, InsufficientStorage, http.StatusInsufficientStorage},
	{predlog.ErrBadCursor, InvalidCursor, http.StatusBadRequest},
	{registry.ErrReservedVersion, InvalidRequest, http.StatusBadRequest},
	{registry.ErrModelNotFound, ModelNotFound, http.StatusBadRequest},
	{inference.ErrModelCorrupted, ModelCorrupted, http.StatusBadRequest},
	{inference.ErrModelNotLoaded, ModelNotLoaded, http.StatusNotFound},
	{inference.ErrInvalidSpectrum, InvalidSpectrum, http.StatusBadRequest},
	{inference.ErrSpectrumOutOfRange, SpectrumOutOfRange, http.StatusBadRequest},
	{trainer.ErrInvalidCSV, InvalidCSV, http.StatusBadRequest},
	{trainer.ErrMemoryBusy, ServerBusy, http.StatusServiceUnavailable},
	{trainer.ErrCSVTooLarge, PayloadTooLarge, http.StatusRequestEntityTooLarge},
	{jobs.ErrJobNotFound, JobNotFound, http.StatusNotFound},
	{predlog.ErrPredictionNotFound, PredictionNotFound, http.StatusNotFound},
	{jobs.ErrJobFinished, JobFinished, http.StatusConflict},
	{jobs.ErrInvalidCursor, InvalidCursor, http.StatusBadRequest},
	{trainer.ErrInvalidOptions, InvalidTrainingOptions, http.StatusBadRequest},
	{jobs.ErrJobNotDone, JobNotDone, http.StatusConflict},
	{review.ErrNoTrainingRecord, NoTrainingRecord, http.StatusConflict},
	{jobs.ErrCancelled, Cancelled, http.StatusConflict},
	{jobs.ErrQueueFull, TrainingQueueFull, http.StatusTooManyRequests},
	{trainer.ErrTrainingDiverged, TrainingDiverged, http.StatusUnprocessableEntity},
	{jobs.ErrInterrupted, Interrupted, http.StatusInternalServerError},
}

// Classify maps any error to its contract code, HTTP status and
// retryability. Unknown errors are INTERNAL_ERROR (500, not retryable).
func Classify(err error) Classified {
	var ce *Error
	if errors.As(err, &ce) {
		status := ce.Status
		if status == 0 {
			status = defaultStatus(ce.Code)
		}
		return Classified{Code: ce.Code, Status: status, Retryable: Retryable(ce.Code), RetryAfter: RetryAfter(ce.Code)}
	}
	if StorageErrno(err) != 0 {
		return Classified{Code: InsufficientStorage, Status: http.StatusInsufficientStorage, Retryable: true, RetryAfter: RetryAfter(InsufficientStorage)}
	}
	for _, d := range domainCodes {
		if errors.Is(err, d.err) {
			return Classified{Code: d.code, Status: d.status, Retryable: Retryable(d.code), RetryAfter: RetryAfter(d.code)}
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// A deadline that ran out inside the server still answers 503, but
		// its retryability is the code's, as everywhere else.
		return Classified{Code: InternalError, Status: http.StatusServiceUnavailable, Retryable: Retryable(InternalError)}
	}
	return Classified{Code: InternalError, Status: http.StatusInternalServerError}
}

// defaultStatus is the HTTP status of a coded error that names none:
// the authentication codes have their own, every other code 400.
func defaultStatus(c Code) int {
	switch c {
	case Unauthorized:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// storageErrnos are the errors of a disk that cannot take a write. The
// registry wraps the *os.PathError of a failed write with %w, so errors.Is
// finds the errno through it.
var storageErrnos = []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EDQUOT}

// StorageErrno returns the errno when err is a disk that cannot take a
// write (ENOSPC, EROFS, EDQUOT), and 0 otherwise.
func StorageErrno(err error) syscall.Errno {
	for _, e := range storageErrnos {
		if errors.Is(err, e) {
			return e
		}
	}
	return 0
}

// Retryable is the one retryability table of both channels: the codes for
// which sending the same request again, unchanged and after a pause, may get
// another answer. Every other code is final: the same request gets the same
// answer.
//
// INTERNAL_ERROR is not in it, on either channel. It is what the server says
// when it cannot classify a fault: on the prediction channel a model that
// panicked or failed in an unmapped way on this spectrum, on the management
// channel an unexpected error of a handler. Neither is known to be
// transient, and a retry of a panicking spectrum panics again (a Lazy Pirate
// client would triple the damage). Faults the server knows to be transient
// have their own codes, listed in retryAfter. Both channels say
// "retryable: false" for it (api/openapi.yaml, api/messages.md).
func Retryable(c Code) bool {
	_, ok := retryAfter[c]
	return ok
}

// RetryAfter is how long a client should wait before it retries a
// retryable code (HTTP's Retry-After header); 0 for a code that is final,
// or retryable without a fixed wait (SHUTTING_DOWN: against the restarted
// server).
func RetryAfter(c Code) time.Duration { return retryAfter[c] }

// retryAfter is the one table of the retryable codes, with their wait.
var retryAfter = map[Code]time.Duration{
	LoadInProgress:      time.Second,      // another load or delete holds the slot for about a second
	TrainingQueueFull:   5 * time.Second,  // a training slot frees when a job ends
	ModelBusy:           5 * time.Second,  // the version is free once its re-scoring job ends
	InsufficientStorage: 30 * time.Second, // once an operator frees space
	ServerBusy:          5 * time.Second,  // a shared buffer, slot or memory budget is momentarily taken (both channels)
	ShuttingDown:        0,                // against the restarted server
	StoreUnavailable:    2 * time.Second,  // the store reconnects on its own once the database answers
	IdempotencyKeyInUse: time.Second,      // the request holding the key records its job within moments
	NotReady:            time.Second,      // a probe asks again
}

// HealthReserveRetryAfter is the wait SERVER_BUSY carries on a connection
// of the health reserve, which answers GET /health only: the contract
// documents a shorter wait there, since a management connection slot
// frees as soon as any request ends.
const HealthReserveRetryAfter = time.Second
