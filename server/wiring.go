package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/server/channel"
	"ramanserve/server/zmtp"
	"ramanserve/trainer"
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

// ModelOptions are the model-engine settings with the instrument axis
// default filled in.
func (c ChannelConfig) ModelOptions() inference.ModelOptions {
	o := c.Model
	if o.InstrumentAxis == nil {
		o.InstrumentAxis = trainer.DefaultWavenumbers()
	}
	return o
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
func (c *predictionChannel) serve(opts channel.Options) {
	c.handler.h = channel.New(opts)
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

func derefBreakdown(b inference.Breakdown) gen.MetricBreakdown {
	if m := breakdown(b); m != nil {
		return *m
	}
	return gen.MetricBreakdown{}
}
