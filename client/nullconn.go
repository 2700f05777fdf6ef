package client

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zeromq/zmq4"
)

// zmq4Conn is a go-zeromq/zmq4 REQ socket: the NULL mechanism.
type zmq4Conn struct{ sock zmq4.Socket }

// dialZMQ4 opens a REQ socket and dials endpoint. zmq4 performs the ZMTP
// greeting inside Dial with no deadline, so a peer that accepts the
// connection and stays silent would hold Dial for ever; an abandoned Dial
// is left to return on its own, and its socket is closed then.
func dialZMQ4(ctx context.Context, endpoint string) (reqConn, error) {
	opts := []zmq4.Option{}
	if d, ok := ctx.Deadline(); ok {
		opts = append(opts, zmq4.WithDialerTimeout(time.Until(d)))
	}
	sock := zmq4.NewReq(context.Background(), opts...)
	dialed := make(chan error, 1)
	go func() { dialed <- sock.Dial(endpoint) }()
	select {
	case err := <-dialed:
		if err != nil {
			sock.Close()
			return nil, err
		}
		return &zmq4Conn{sock: sock}, nil
	case <-ctx.Done():
		go func() {
			<-dialed
			sock.Close()
		}()
		return nil, ctx.Err()
	}
}

func (z *zmq4Conn) roundTrip(ctx context.Context, frame []byte) ([]byte, error) {
	if err := z.sock.Send(zmq4.NewMsg(frame)); err != nil {
		return nil, err
	}
	type result struct {
		msg zmq4.Msg
		err error
	}
	ch := make(chan result, 1)
	sock := z.sock
	go func() {
		m, err := sock.Recv()
		ch <- result{m, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		if len(r.msg.Frames) != 1 {
			return nil, fmt.Errorf("%w: %d frames", ErrBadReply, len(r.msg.Frames))
		}
		return r.msg.Frames[0], nil
	case <-ctx.Done():
		// The Recv above ends when the caller closes the stuck socket.
		return nil, ctx.Err()
	}
}

func (z *zmq4Conn) close() error { return z.sock.Close() }
