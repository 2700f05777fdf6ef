package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/inference/modelfile"
	"ramanserve/registry"
	"ramanserve/server/channel"
	"ramanserve/server/contract"
	"ramanserve/server/zmtp"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/membudget"
)

// ChannelConfig configures the prediction channel and how models are
// built. Zero fields take the documented defaults (api/messages.md).
type ChannelConfig struct {
	MaxMessageBytes  int64
	HandshakeTimeout time.Duration
	MaxConnections   int
	// FrameTimeout bounds how long a message may stay incomplete once its
	// first byte arrived; MaxPartialBytes caps the message bytes all
	// connections hold beyond their own 64 KiB; EvictableAfter is how long a
	// peer that had a reply must be silent before a newcomer may evict it.
	FrameTimeout    time.Duration
	MaxPartialBytes int64
	EvictableAfter  time.Duration
	// Model holds the model-engine settings: instrument axis, tolerances,
	// saturation level. A nil InstrumentAxis means the default 2048-point
	// axis of the interface document, used for models that carry none
	// (scikit-learn files).
	Model inference.ModelOptions
	// Curve turns CurveZMQ on when its secret key file is set (curve.go).
	Curve CurveConfig
}

// TrainingConfig configures training jobs.
type TrainingConfig struct {
	QueueSize int             // jobs waiting behind the running one; default 4
	Options   trainer.Options // folds, components, preprocessing
	// MaxMemoryBytes is the training memory budget (-max-training-memory):
	// every upload being parsed and every data set of a queued or running
	// job, with its training copies, is charged to it; an upload that would
	// cross it is refused 413. 0 means membudget.DefaultLimit(), a quarter
	// of physical memory.
	MaxMemoryBytes int64
}

// TrainingMemoryOverhead is the fixed memory the process needs beside the
// training budget: the Go runtime and its garbage, HTTP and prediction
// buffers, loaded models, and the line buffers of the at most
// -training-queue + 1 uploads being parsed (about 1.5 MiB each). Peak RSS
// stays under the budget plus this; cmd/ramanserve sets the Go soft
// memory limit to their sum so the collector keeps garbage within it.
const TrainingMemoryOverhead = 128 << 20

// modelOptions fills the instrument axis default.
func (c ChannelConfig) modelOptions() inference.ModelOptions {
	o := c.Model
	if o.InstrumentAxis == nil {
		o.InstrumentAxis = trainer.DefaultWavenumbers()
	}
	return o
}

// ModelOpeners are the model readers the server uses, for tools that read
// a registry without serving it (ramanserve registry check).
func ModelOpeners(cfg ChannelConfig) map[string]registry.OpenFunc { return modelOpeners(cfg) }

// modelOpeners maps registry file extensions to readers: .npz artifacts of
// models trained here, and scikit-learn .joblib files.
func modelOpeners(cfg ChannelConfig) map[string]registry.OpenFunc {
	opts := cfg.modelOptions()
	return map[string]registry.OpenFunc{
		".npz": func(ctx context.Context, path string, e registry.Entry) (inference.Model, error) {
			p, err := readModelFile(ctx, path, e)
			if err != nil {
				return nil, err
			}
			p.Meta.Version = e.Version
			return inference.NewPLSModel(p, opts)
		},
		".joblib": func(ctx context.Context, path string, e registry.Entry) (inference.Model, error) {
			return openJoblib(ctx, path, e, opts)
		},
	}
}

// readModelFile reads the parameters of the model file at path, of
// either kind (modelfile.Read).
func readModelFile(ctx context.Context, path string, e registry.Entry) (*inference.PLSParams, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", inference.ErrModelCorrupted, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", inference.ErrModelCorrupted, err)
	}
	return modelfile.Read(ctx, f, st.Size(), filepath.Ext(path), e.Target)
}

// predictionChannel is the bound ZMTP server with the channel handler.
type predictionChannel struct {
	srv       *zmtp.Server
	curve     *curveAccess // nil: NULL
	handler   deferredHandler
	listening atomic.Bool
	served    chan error
}

// deferredHandler lets the port be bound before the registry is open: its
// handler is set by serve, before the first connection is accepted.
type deferredHandler struct{ h zmtp.Handler }

func (d *deferredHandler) Handle(ctx context.Context, req zmtp.Request, dst []byte) []byte {
	return d.h.Handle(ctx, req, dst)
}

// transportConfig is the ZMTP server's share of the configuration.
func (c ChannelConfig) transportConfig() zmtp.Config {
	return zmtp.Config{
		MaxMessageSize:   c.MaxMessageBytes,
		HandshakeTimeout: c.HandshakeTimeout,
		MaxConnections:   c.MaxConnections,
		FrameTimeout:     c.FrameTimeout,
		MaxPartialBytes:  c.MaxPartialBytes,
		EvictableAfter:   c.EvictableAfter,
		// The keys are read by listenChannel; what a connection holds
		// (MemoryBound) needs to know only that CURVE is on.
		Curve: curveOn(c.Curve),
	}
}

// curveOn is a key-less CURVE transport configuration when CURVE is
// configured, nil otherwise.
func curveOn(c CurveConfig) *zmtp.CurveConfig {
	if c.SecretKeyFile == "" {
		return nil
	}
	return &zmtp.CurveConfig{}
}

// ConnectionMemoryBound is the most the prediction channel's connections
// hold, however the peers behave (api/messages.md section 5).
func (c ChannelConfig) ConnectionMemoryBound() int64 { return c.transportConfig().MemoryBound() }

// listenChannel binds the prediction endpoint without serving it yet.
func listenChannel(endpoint string, cfg ChannelConfig, log *slog.Logger) (*predictionChannel, error) {
	c := &predictionChannel{served: make(chan error, 1)}
	tc := cfg.transportConfig()
	tc.Logger = log
	access, err := loadCurve(cfg.Curve, log)
	if err != nil {
		return nil, err
	}
	c.curve = access
	if access != nil {
		tc.Curve = access.transport()
	}
	srv, err := zmtp.Listen(endpoint, tc, &c.handler)
	if err != nil {
		return nil, err
	}
	c.srv = srv
	return c, nil
}

// serve starts accepting prediction requests on the registry's models,
// recording each into rec and logging each prediction into plog.
func (c *predictionChannel) serve(reg *registry.Registry, version string, started time.Time, rec channel.Recorder, plog channel.PredictionLog, log *slog.Logger) {
	c.handler.h = channel.New(channel.Options{Models: reg, ServerVersion: version, Started: started, Recorder: rec, Log: plog, Logger: log})
	c.listening.Store(true)
	go func() {
		err := c.srv.Serve(context.Background())
		c.listening.Store(false)
		c.served <- err
	}()
}

func (c *predictionChannel) up() bool { return c.listening.Load() }

// OpenConnections is the number of ZMTP connections open now, handshaking
// ones included (the metrics read it at scrape time).
func (c *predictionChannel) OpenConnections() int { return c.srv.Stats().OpenConnections }

func (c *predictionChannel) endpoint() string {
	addr, ok := c.srv.Addr().(*net.TCPAddr)
	if !ok {
		return c.srv.Endpoint()
	}
	return fmt.Sprintf("tcp://%s", addr.String())
}

func (c *predictionChannel) shutdown(ctx context.Context) error {
	return c.srv.Shutdown(ctx)
}

// startTraining opens the job manager on the registry's jobs folder and
// plugs it into the HTTP API.
func (a *App) startTraining(ctx context.Context) error {
	reg := a.Registry
	limit := a.cfg.Training.MaxMemoryBytes
	if limit <= 0 {
		var err error
		if limit, err = membudget.DefaultLimit(); err != nil {
			return fmt.Errorf("training memory budget: %w; set -max-training-memory", err)
		}
	}
	m, err := jobs.New(jobs.Options{
		Dir:       reg.JobsDir(),
		QueueSize: a.cfg.Training.QueueSize,
		Train:     a.cfg.Training.Options,
		Budget:    membudget.New(limit),
		Logger:    a.log.With("component", "training"),
		Classify:  func(err error) string { return string(contract.Classify(err).Code) },
		Publish:   publisher{reg: reg}.publish,
	})
	if err != nil {
		return fmt.Errorf("training jobs: %w", err)
	}
	a.jobs = m
	a.api.Training = trainingService{m: m, now: time.Now}
	return nil
}

// publisher stages a trained model in the registry with its lineage and
// cross-validated figures.
type publisher struct{ reg *registry.Registry }

func (p publisher) publish(ctx context.Context, res *trainer.Result, lin jobs.Lineage) (string, string, error) {
	params := res.Params
	return p.reg.AddStaged(ctx, registry.StagedModel{
		Ext:               ".npz",
		TrainedAt:         params.Meta.TrainedAt,
		TrainedSamples:    params.Meta.TrainedSamples,
		Algorithm:         params.Meta.Algorithm,
		Operator:          lin.Operator,
		AuthenticatedAs:   lin.AuthenticatedAs,
		SourceBatches:     lin.SourceBatches,
		Notes:             lin.Notes,
		Annotations:       lin.Annotations,
		JobID:             lin.JobID,
		TrainingCSVSHA256: lin.CSVSHA256,
		TrainingRows:      lin.Rows,
		RowsUsed:          lin.RowsUsed,
		Metrics:           &registry.Metrics{RMSE: params.Meta.RMSE, R2: params.Meta.R2, Components: res.Components},
		Shape:             registry.ShapeOf(params),
		Write: func(version string, w io.Writer) error {
			stamped := *params
			stamped.Meta.Version = version
			return inference.WriteArtifact(w, &stamped)
		},
	})
}

func (a *App) stopTraining(ctx context.Context) error {
	if a.jobs == nil {
		return nil
	}
	return a.jobs.Close(ctx)
}

// trainingService adapts the job manager to the generated API types.
type trainingService struct {
	m   *jobs.Manager
	now func() time.Time
}

func (s trainingService) Reserve(ctx context.Context) (TrainingUpload, error) {
	r, err := s.m.Reserve(ctx)
	if err != nil {
		return nil, err
	}
	return trainingUpload{Reservation: r, m: s.m}, nil
}

// trainingUpload adapts a job reservation to the generated API types.
type trainingUpload struct {
	*jobs.Reservation
	m *jobs.Manager
}

func (u trainingUpload) Submit(ctx context.Context, ds *trainer.Dataset, meta gen.TrainingMeta, csvSHA256 string) (gen.TrainingJobAccepted, error) {
	opts, err := trainingOptions(meta)
	if err != nil {
		return gen.TrainingJobAccepted{}, err
	}
	// The token's name comes from the request's context (the web layer's
	// token gate), next to the operator the upload declares.
	jm := jobs.Meta{Operator: meta.Operator, AuthenticatedAs: authenticatedAs(ctx), CSVSHA256: csvSHA256, Options: opts}
	if meta.SourceBatches != nil {
		jm.SourceBatches = *meta.SourceBatches
	}
	if meta.Notes != nil {
		jm.Notes = *meta.Notes
	}
	if jm.Annotations, err = compactAnnotations(meta.Annotations); err != nil {
		return gen.TrainingJobAccepted{}, err
	}
	j, err := u.m.SubmitReserved(ctx, u.Reservation, ds, jm)
	if err != nil {
		return gen.TrainingJobAccepted{}, err
	}
	est := j.EstimatedSeconds
	url := "/training/" + j.ID
	return gen.TrainingJobAccepted{JobId: j.ID, EstimatedDurationSeconds: &est, StatusUrl: &url}, nil
}

func (s trainingService) Job(ctx context.Context, id string) (gen.TrainingJob, error) {
	j, err := s.m.Get(ctx, id)
	if err != nil {
		return gen.TrainingJob{}, err
	}
	return s.trainingJob(&j), nil
}

func (s trainingService) Jobs(ctx context.Context, status *gen.TrainingJobStatus, limit int, cursor string) (gen.TrainingJobList, error) {
	var want jobs.Status
	if status != nil {
		want = jobs.Status(*status)
	}
	page, err := s.m.List(want, limit, cursor)
	if err != nil {
		return gen.TrainingJobList{}, err
	}
	out := gen.TrainingJobList{Jobs: make([]gen.TrainingJob, 0, len(page.Jobs))}
	for i := range page.Jobs {
		out.Jobs = append(out.Jobs, listedJob(s.trainingJob(&page.Jobs[i])))
	}
	if page.Next != "" {
		out.NextCursor = &page.Next
	}
	return out, nil
}

func (s trainingService) Cancel(ctx context.Context, id string) (gen.TrainingJob, error) {
	j, err := s.m.Cancel(ctx, id)
	if err != nil {
		return gen.TrainingJob{}, err
	}
	return s.trainingJob(&j), nil
}

// trainingJob converts a job record to the contract's TrainingJob.
func (s trainingService) trainingJob(j *jobs.Job) gen.TrainingJob {
	elapsed := int(j.Elapsed(s.now()).Seconds())
	out := gen.TrainingJob{JobId: j.ID, Status: gen.TrainingJobStatus(j.Status), Progress: j.Progress, ElapsedSeconds: &elapsed,
		StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, Samples: ptr(j.Samples), AuthenticatedAs: optional(j.Meta.AuthenticatedAs)}
	if !j.SubmittedAt.IsZero() {
		out.SubmittedAt = ptr(j.SubmittedAt)
	}
	if j.Meta.Operator != "" {
		meta := gen.TrainingMeta{Operator: j.Meta.Operator, Notes: optional(j.Meta.Notes)}
		if len(j.Meta.SourceBatches) > 0 {
			meta.SourceBatches = ptr(j.Meta.SourceBatches)
		}
		echoTrainingOptions(&meta, j.Meta.Options)
		meta.Annotations = contractAnnotations(j.Meta.Annotations)
		out.Meta = &meta
	}
	if j.Result != nil {
		out.Result = trainingResult(j)
	}
	if j.Error != nil {
		out.Error = &gen.TrainingError{Code: j.Error.Code, Message: j.Error.Message}
	}
	out.Kind = ptr(gen.TrainingJobKind(j.KindOf()))
	out.Rescore = rescoreSpec(j)
	return out
}

func derefBreakdown(b inference.Breakdown) gen.MetricBreakdown {
	if m := breakdown(b); m != nil {
		return *m
	}
	return gen.MetricBreakdown{}
}

// openJoblib reads a scikit-learn .joblib file with the restricted reader
// (nothing in it is executed). scikit-learn files carry no wavenumber axis:
// the model gets the instrument axis when its feature count matches it. A
// one-target model names its analyte in its sidecar, which the registry
// read at import (Entry.Target).
func openJoblib(ctx context.Context, path string, e registry.Entry, opts inference.ModelOptions) (inference.Model, error) {
	params, err := readModelFile(ctx, path, e)
	if err != nil {
		return nil, err
	}
	params.Meta.Version = e.Version
	params.Meta.TrainedAt = e.TrainedAt
	if len(opts.InstrumentAxis) != len(params.XMean) {
		opts.InstrumentAxis = nil
	}
	return inference.NewPLSModel(params, opts)
}
