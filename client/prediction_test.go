package client_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/server/channel"
	"ramanserve/server/codec"
	"ramanserve/server/contract"
	"ramanserve/server/zmtp"
)

type constModel struct{ meta inference.Metadata }

func (m *constModel) Metadata() *inference.Metadata { return &m.meta }
func (m *constModel) Targets() []inference.Analyte  { return []inference.Analyte{inference.EPA} }
func (m *constModel) Predict(s *inference.Spectrum, out *inference.Prediction) error {
	if len(s.Intensities) != 3 {
		return inference.ErrInvalidSpectrum
	}
	*out = inference.Prediction{}
	out.Concentrations.Set(inference.EPA, 42)
	out.Confidence.Set(inference.EPA, 1)
	return nil
}

type source struct{ m inference.Model }

func (s source) Active() inference.Model { return s.m }

// serve runs the real channel handler on a real ZMTP server; the first
// held requests get no reply until the test ends, so a client's timeout
// fires on an event the test controls, however busy the machine.
func serve(t *testing.T, held int32) string {
	t.Helper()
	return serveWith(t, zmtp.Config{}, held)
}

// serveWith is serve with a transport configuration (CURVE).
func serveWith(t *testing.T, cfg zmtp.Config, held int32) string {
	t.Helper()
	h := channel.New(channel.Options{Models: source{&constModel{meta: inference.Metadata{Version: "c-1", Wavenumbers: []float64{1, 2, 3}}}}, ServerVersion: "t"})
	var n atomic.Int32
	release := make(chan struct{})
	srv, err := zmtp.Listen("tcp://127.0.0.1:0", cfg, zmtp.HandlerFunc(func(ctx context.Context, req zmtp.Request, dst []byte) []byte {
		if n.Add(1) <= held {
			<-release
		}
		return h.Handle(ctx, req, dst)
	}))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	t.Cleanup(func() { close(release) }) // cleanups run last-first: release, then shut down
	return "tcp://" + srv.Addr().String()
}

func TestPredictionCalls(t *testing.T) {
	ep := serve(t, 0)
	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkCalls(t, c)
}

// checkCalls makes each call against serveWith's model: pong, a
// prediction, the model info, and a contract error, which comes back
// typed and not retried.
func checkCalls(t *testing.T, c *client.PredictionClient) {
	t.Helper()
	pong, err := c.Ping(context.Background())
	if err != nil || pong.ModelVersion != "c-1" || pong.ProtocolVersion != 1 {
		t.Fatalf("ping: %+v %v", pong, err)
	}
	pr, err := c.Predict(context.Background(), &client.Spectrum{Wavenumbers: []float64{1, 2, 3}, Intensities: []float64{1, 2, 3}}, nil)
	if err != nil || pr.Concentrations.Value[0] != 42 || pr.ModelVersion != "c-1" {
		t.Fatalf("predict: %+v %v", pr, err)
	}
	mi, err := c.ModelInfo(context.Background())
	if err != nil || mi.ActiveVersion != "c-1" || mi.Wavenumbers != nil {
		t.Fatalf("model info: %+v %v", mi, err)
	}
	mi, err = c.ModelInfoWithAxis(context.Background())
	if err != nil || mi.ActiveVersion != "c-1" || !slices.Equal(mi.Wavenumbers, []float64{1, 2, 3}) {
		t.Fatalf("model info with the axis: %+v %v", mi, err)
	}
	_, err = c.Predict(context.Background(), &client.Spectrum{Wavenumbers: []float64{1}, Intensities: []float64{1}}, nil)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "INVALID_SPECTRUM" || ce.Retryable {
		t.Fatalf("invalid spectrum: %v", err)
	}
}

func TestPredictionLazyPirateRetry(t *testing.T) {
	// The first request is answered too late: the client gives up on that
	// socket, opens a new one and succeeds on the retry.
	ep := serve(t, 1)
	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{Timeout: time.Second, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pong, err := c.Ping(context.Background())
	if err != nil || pong.ModelVersion != "c-1" {
		t.Fatalf("ping after a lost reply: %+v %v", pong, err)
	}
}

func TestPredictionGivesUp(t *testing.T) {
	ep := serve(t, 100)
	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{Timeout: time.Second, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Ping(context.Background()); !errors.Is(err, client.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

// TestRoundTripSendsRawFrames: a frame the typed calls cannot build gets
// the contract's error reply, and a timed-out round trip leaves a client
// that reconnects and works.
func TestRoundTripSendsRawFrames(t *testing.T) {
	ep := serve(t, 1)
	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	ping := client.AppendPingRequest(nil, "slow", 0)
	if _, err := c.RoundTrip(ctx, ping); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delayed reply: err = %v, want the context's deadline", err)
	}
	cancel()

	raw, err := c.RoundTrip(context.Background(), []byte{0xc1}) // never valid MessagePack
	if err != nil {
		t.Fatalf("after a timeout the client must reconnect: %v", err)
	}
	rep, err := client.DecodeReply(raw)
	if err != nil || rep.Type != "error" || rep.Error == nil || rep.Error.Code != "MALFORMED_MESSAGE" || rep.CorrelationID != "" {
		t.Fatalf("reply to garbage: %+v %v", rep, err)
	}
}

// TestPredictionBacksOffOnServerBusy: a retryable reply is sent again,
// after a wait (api/messages.md 6.2: backoff with jitter), not at once: a
// busy server must not be hammered by every rig in a loop.
func TestPredictionBacksOffOnServerBusy(t *testing.T) {
	var (
		mu       sync.Mutex
		arrivals []time.Time
	)
	ids := codec.NewIDGenerator()
	var req codec.Request
	srv, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Config{}, zmtp.HandlerFunc(func(ctx context.Context, r zmtp.Request, dst []byte) []byte {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		_ = codec.DecodeRequest(r.Frames[0], &req)
		meta := codec.ReplyMeta{ID: ids.Next(), CorrelationID: req.ID}
		return codec.AppendErrorReply(dst, meta, req.Type, contract.Errorf(contract.ServerBusy, "busy"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(context.Background())
	defer srv.Shutdown(context.Background())

	c, err := client.DialPrediction(context.Background(), "tcp://"+srv.Addr().String(),
		client.PredictionOptions{Timeout: 2 * time.Second, Retries: 2, Backoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ce *client.Error
	if _, err := c.Ping(context.Background()); !errors.As(err, &ce) || ce.Code != "SERVER_BUSY" {
		t.Fatalf("err = %v, want SERVER_BUSY after the last attempt", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals) != 3 {
		t.Fatalf("%d attempts, want 3", len(arrivals))
	}
	// Backoff 100 ms with jitter x0.5..1.5: at least 50 ms before the
	// first retry, 100 ms before the second.
	for i, min := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
		if gap := arrivals[i+1].Sub(arrivals[i]); gap < min {
			t.Errorf("retry %d sent %v after the busy reply, want at least %v", i+1, gap, min)
		}
	}
}

// TestPredictionBackoffHonoursTheContext: a context that ends during the
// wait ends the call at once with the context's error.
func TestPredictionBackoffHonoursTheContext(t *testing.T) {
	ep := serve(t, 100)
	c, err := client.DialPrediction(context.Background(), ep,
		client.PredictionOptions{Timeout: time.Second, Retries: 2, Backoff: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // ends in the first backoff
	defer cancel()
	began := time.Now()
	if _, err := c.Ping(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if took := time.Since(began); took > 6*time.Second {
		t.Fatalf("the call outlived its context by %v", took)
	}
}

// TestPredictionSilentPeer: a peer that accepts the TCP connection and
// never sends the ZMTP greeting (a wrong port, a hung process) must cost
// a call its timeout, not block it for ever.
func TestPredictionSilentPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 16)
	defer func() { // the silent peer hangs up when the test ends
		ln.Close()
		for {
			select {
			case conn := <-conns:
				conn.Close()
			default:
				return
			}
		}
	}()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- conn:
			default:
				conn.Close()
			}
		}
	}()
	endpoint := "tcp://" + ln.Addr().String()
	done := make(chan error, 1)
	go func() {
		c, err := client.DialPrediction(context.Background(), endpoint, client.PredictionOptions{Timeout: 200 * time.Millisecond, Retries: -1})
		if err == nil {
			_, err = c.Ping(context.Background())
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, client.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
	case <-time.After(time.Minute): // without the timeout it waits for ever
		t.Fatal("a silent peer held DialPrediction for a minute (timeout 200 ms)")
	}
}
