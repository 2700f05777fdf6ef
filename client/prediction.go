package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/uuid"

	"ramanserve/server/codec/wire"
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
}

// maxBackoff caps the wait between two attempts.
const maxBackoff = 5 * time.Second

// ErrTimeout is returned when no attempt got a reply in time.
var ErrTimeout = errors.New("prediction channel: no reply")

// PredictionClient talks to one prediction endpoint over a go-zeromq/zmq4
// REQ socket.
//
// Each call has a timeout. When a reply does not come in time the client
// follows the "Lazy Pirate" recipe of api/messages.md: it closes the socket
// (a REQ socket that lost its reply is stuck), backs off, opens a new one
// and sends the request again with a new id, up to
// PredictionOptions.Retries times. An error reply the server marks
// retryable (SERVER_BUSY) is sent again after the same backoff; every
// other error reply is returned at once as *Error. A
// PredictionClient is not safe for concurrent use; open one per goroutine,
// as with any REQ socket.
type PredictionClient struct {
	endpoint string
	opts     PredictionOptions
	sock     zmq4.Socket
	buf      []byte
}

// DialPrediction connects to endpoint, e.g. "tcp://localhost:5555".
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
	c := &PredictionClient{endpoint: endpoint, opts: opts}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// connect opens a socket and dials the endpoint, waiting at most the
// per-attempt timeout or until ctx ends. zmq4 performs the ZMTP greeting
// inside Dial with no deadline, so a peer that accepts the connection and
// stays silent would hold Dial for ever; an abandoned Dial is left to
// return on its own, and its socket is closed then.
func (c *PredictionClient) connect(ctx context.Context) error {
	sock := zmq4.NewReq(context.Background(), zmq4.WithDialerTimeout(c.opts.Timeout))
	dialed := make(chan error, 1)
	go func() { dialed <- sock.Dial(c.endpoint) }()
	timer := time.NewTimer(c.opts.Timeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-dialed:
		if err == nil {
			c.sock = sock
			return nil
		}
		sock.Close()
		return fmt.Errorf("dial %s: %w", c.endpoint, err)
	case <-timer.C:
		err = ErrTimeout
	case <-ctx.Done():
		err = ctx.Err()
	}
	go func() {
		<-dialed
		sock.Close()
	}()
	return fmt.Errorf("dial %s: %w", c.endpoint, err)
}

// Close releases the socket.
func (c *PredictionClient) Close() error {
	if c.sock == nil {
		return nil
	}
	err := c.sock.Close()
	c.sock = nil
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
		if c.sock == nil {
			if err := c.connect(ctx); err != nil {
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
// suite's malformed requests). On a timeout the socket is dropped, so the
// next call reconnects (Lazy Pirate). The wait ends at PredictionOptions.Timeout or
// ctx's deadline, whichever comes first.
func (c *PredictionClient) RoundTrip(ctx context.Context, frame []byte) ([]byte, error) {
	if c.sock == nil {
		if err := c.connect(ctx); err != nil {
			return nil, err
		}
	}
	raw, err := c.roundTrip(ctx, frame)
	if err != nil {
		c.Close()
	}
	return raw, err
}

func (c *PredictionClient) roundTrip(ctx context.Context, frame []byte) ([]byte, error) {
	if err := c.sock.Send(zmq4.NewMsg(frame)); err != nil {
		return nil, err
	}
	type result struct {
		msg zmq4.Msg
		err error
	}
	ch := make(chan result, 1)
	sock := c.sock
	go func() {
		m, err := sock.Recv()
		ch <- result{m, err}
	}()
	timer := time.NewTimer(c.opts.Timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		if len(r.msg.Frames) != 1 {
			return nil, fmt.Errorf("%w: %d frames", ErrBadReply, len(r.msg.Frames))
		}
		return r.msg.Frames[0], nil
	case <-timer.C:
		return nil, ErrTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// unixNow is the envelope's ts: seconds since the Unix epoch.
func unixNow() float64 { return float64(time.Now().UnixNano()) / 1e9 }
