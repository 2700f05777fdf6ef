package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"ramanserve/server/codec/wire"
	"ramanserve/server/zmtp/curve"
)

// PredictionOptions configure a PredictionClient. Zero fields take the defaults.
type PredictionOptions struct {
	Timeout time.Duration // per attempt; default 1 s
	Retries int           // extra attempts after a timeout or a retryable error; default 2; negative means none
	// Backoff is the wait before the first retry; each later retry waits
	// twice as long as the one before, at most maxBackoff, and every wait
	// is scaled by a random factor in [0.5, 1.5) so that a fleet of rigs
	// does not retry in step (api/messages.md 6.2). Default 100 ms.
	Backoff time.Duration
	// Curve turns CurveZMQ (RFC 26) on: the server's public key and the
	// client's own key pair. Nil: the NULL mechanism (plaintext).
	Curve *CurveOptions
}

// maxBackoff caps the wait between two attempts.
const maxBackoff = 5 * time.Second

// ErrTimeout is returned when no attempt got a reply in time.
var ErrTimeout = errors.New("prediction channel: no reply")

// PredictionClient talks to one prediction endpoint over a REQ
// connection: go-zeromq/zmq4's REQ socket for the NULL mechanism, or, with
// PredictionOptions.Curve, the client's own CurveZMQ REQ connection
// (curve.go), since zmq4 has no CURVE.
//
// Each call has a timeout. When a reply does not come in time the client
// follows the "Lazy Pirate" recipe of api/messages.md: it closes the
// connection (a REQ socket that lost its reply is stuck), backs off, opens
// a new one and sends the request again with a new id, up to
// PredictionOptions.Retries times. An error reply the server marks
// retryable (SERVER_BUSY) is sent again after the same backoff; every
// other error reply is returned at once as *Error, and so is a CURVE
// handshake the server refused (ErrCurveHandshake). A PredictionClient is
// not safe for concurrent use; open one per goroutine, as with any REQ
// socket.
type PredictionClient struct {
	endpoint string
	opts     PredictionOptions
	dial     dialFunc
	conn     reqConn
	buf      []byte
	curveKey *curve.PublicKey // the client's CURVE public key; nil with NULL
}

// reqConn is one REQ connection, the part the Lazy Pirate loop of call
// throws away and dials again: zmq4's socket (NULL) or curveConn (CURVE).
type reqConn interface {
	// roundTrip sends one request frame and returns the one reply frame,
	// valid until the next roundTrip. It returns when ctx ends.
	roundTrip(ctx context.Context, frame []byte) ([]byte, error)
	close() error
}

// dialFunc opens a reqConn to endpoint; it returns when ctx ends.
type dialFunc func(ctx context.Context, endpoint string) (reqConn, error)

// DialPrediction connects to endpoint, e.g. "tcp://localhost:5555". With
// opts.Curve it performs the CurveZMQ handshake, and fails with
// ErrCurveHandshake when the server refuses it or is not the server whose
// key it was given.
func DialPrediction(ctx context.Context, endpoint string, opts PredictionOptions) (*PredictionClient, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.Retries == 0 {
		opts.Retries = 2
	}
	if opts.Retries < 0 {
		opts.Retries = 0
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 100 * time.Millisecond
	}
	c := &PredictionClient{endpoint: endpoint, opts: opts, dial: dialZMQ4}
	if opts.Curve != nil {
		keys, err := newCurveKeys(*opts.Curve)
		if err != nil {
			return nil, err
		}
		c.dial = keys.dial
		c.curveKey = &keys.public
	}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// CurvePublicKey is the client's own CURVE public key, the one a server's
// allowlist (-zmq-curve-clients) must name; ok is false without CURVE.
func (c *PredictionClient) CurvePublicKey() (key curve.PublicKey, ok bool) {
	if c.curveKey == nil {
		return curve.PublicKey{}, false
	}
	return *c.curveKey, true
}

// connect opens a connection, waiting at most the per-attempt timeout or
// until ctx ends.
func (c *PredictionClient) connect(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	conn, err := c.dial(actx, c.endpoint)
	if err != nil {
		return fmt.Errorf("dial %s: %w", c.endpoint, attemptErr(ctx, err))
	}
	c.conn = conn
	return nil
}

// Close releases the connection.
func (c *PredictionClient) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.close()
	c.conn = nil
	return err
}

// Ping checks the server and returns its pong.
func (c *PredictionClient) Ping(ctx context.Context) (*Pong, error) {
	rep, err := c.call(ctx, func(dst []byte, id string) []byte {
		return AppendPingRequest(dst, id, unixNow())
	}, wire.TypePong)
	if err != nil {
		return nil, err
	}
	return DecodePong(rep.Body)
}

// Predict sends one spectrum and returns the prediction. sc may be nil.
func (c *PredictionClient) Predict(ctx context.Context, s *Spectrum, sc *ScanContext) (*PredictReply, error) {
	rep, err := c.call(ctx, func(dst []byte, id string) []byte {
		return AppendPredictRequest(dst, id, unixNow(), s, sc)
	}, wire.TypePredictReply)
	if err != nil {
		return nil, err
	}
	return DecodePredictReply(rep.Body)
}

// ModelInfo returns the active model's description.
func (c *PredictionClient) ModelInfo(ctx context.Context) (*ModelInfo, error) {
	rep, err := c.call(ctx, func(dst []byte, id string) []byte {
		return AppendModelInfoRequest(dst, id, unixNow())
	}, wire.TypeModelInfoReply)
	if err != nil {
		return nil, err
	}
	return DecodeModelInfoReply(rep.Body)
}

// ModelInfoWithAxis returns the active model's description with its
// axis (ModelInfo.Wavenumbers), for checking a spectrum before sending
// it. A server that does not give the axis leaves Wavenumbers nil.
func (c *PredictionClient) ModelInfoWithAxis(ctx context.Context) (*ModelInfo, error) {
	rep, err := c.call(ctx, func(dst []byte, id string) []byte {
		return AppendModelInfoAxisRequest(dst, id, unixNow())
	}, wire.TypeModelInfoReply)
	if err != nil {
		return nil, err
	}
	return DecodeModelInfoReply(rep.Body)
}

// call sends a request built by build and waits for its reply, retrying
// with a fresh socket on timeout. Error replies are returned as *Error.
func (c *PredictionClient) call(ctx context.Context, build func(dst []byte, id string) []byte, wantType string) (*Reply, error) {
	var lastErr error
	for attempt := 0; attempt <= c.opts.Retries; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if attempt > 0 {
			if err := c.backOff(ctx, attempt); err != nil {
				return nil, err
			}
		}
		if c.conn == nil {
			if err := c.connect(ctx); err != nil {
				if isRefusal(err) {
					return nil, err // a refusal does not pass with time
				}
				lastErr = err
				continue
			}
		}
		id := uuid.NewString()
		c.buf = build(c.buf[:0], id)
		raw, err := c.roundTrip(ctx, c.buf)
		if err != nil {
			// Lazy Pirate: the socket may be stuck; drop it.
			c.Close()
			lastErr = err
			continue
		}
		rep, err := DecodeReply(raw)
		if err != nil {
			return nil, err
		}
		if rep.Version != wire.ProtocolVersion {
			return nil, fmt.Errorf("%w: v=%d", ErrBadReply, rep.Version)
		}
		if rep.CorrelationID != id && rep.CorrelationID != "" {
			return nil, fmt.Errorf("%w: correlation_id %q, sent %q", ErrBadReply, rep.CorrelationID, id)
		}
		if rep.Error != nil {
			if rep.Error.Retryable && attempt < c.opts.Retries {
				lastErr = rep.Error
				continue
			}
			return nil, rep.Error
		}
		if rep.Type != wantType {
			return nil, fmt.Errorf("%w: reply type %q, want %q", ErrBadReply, rep.Type, wantType)
		}
		return rep, nil
	}
	if errors.Is(lastErr, ErrTimeout) {
		return nil, fmt.Errorf("%w after %d attempts of %v", ErrTimeout, c.opts.Retries+1, c.opts.Timeout)
	}
	return nil, lastErr
}

// backOff waits before retry number retry (1 for the first): Backoff
// doubled for each retry after the first, capped at maxBackoff, times a
// random factor in [0.5, 1.5). It returns early with ctx's error.
func (c *PredictionClient) backOff(ctx context.Context, retry int) error {
	wait := c.opts.Backoff
	for i := 1; i < retry && wait < maxBackoff; i++ {
		wait *= 2
	}
	wait = min(wait, maxBackoff)
	wait = time.Duration(float64(wait) * (0.5 + rand.Float64()))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RoundTrip sends one already-encoded request frame and returns the raw
// reply frame: one attempt, no retry and no check of the reply. It is for
// tools that need to send what the typed calls cannot (the conformance
// suite's malformed requests). On a timeout the connection is dropped, so
// the next call reconnects (Lazy Pirate). The wait ends at
// PredictionOptions.Timeout or ctx's deadline, whichever comes first.
func (c *PredictionClient) RoundTrip(ctx context.Context, frame []byte) ([]byte, error) {
	if c.conn == nil {
		if err := c.connect(ctx); err != nil {
			return nil, err
		}
	}
	raw, err := c.roundTrip(ctx, frame)
	if err != nil {
		c.Close()
		return nil, err
	}
	return bytes.Clone(raw), nil
}

// roundTrip is one attempt on the open connection, bounded by the
// per-attempt timeout.
func (c *PredictionClient) roundTrip(ctx context.Context, frame []byte) ([]byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	raw, err := c.conn.roundTrip(actx, frame)
	if err != nil {
		return nil, attemptErr(ctx, err)
	}
	return raw, nil
}

// attemptErr names why an attempt under ctx failed: ctx's own error when
// ctx has ended (the caller's deadline or cancel), ErrTimeout when only
// the attempt's timeout ran out, else err itself.
func attemptErr(ctx context.Context, err error) error {
	if cerr := ended(ctx); cerr != nil {
		return cerr
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		return fmt.Errorf("%w (%v)", ErrTimeout, err)
	}
	return err
}

// ended is ctx's error, or DeadlineExceeded once its deadline has passed:
// a socket deadline set from ctx can fire a moment before ctx's own timer.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// unixNow is the envelope's ts: seconds since the Unix epoch.
func unixNow() float64 { return float64(time.Now().UnixNano()) / 1e9 }
