// Package zmtp is a ZeroMQ REP server transport: it speaks ZMTP 3.1 (RFC 37)
// over TCP, also accepts ZMTP 3.0 peers (RFC 23), and hands each request's
// body frames to a Handler that returns exactly one reply frame. It knows
// nothing about the payload encoding.
//
// # Handshake
//
// The server sends its whole 64-byte greeting (version 3.1, mechanism NULL,
// or CURVE with as-server set when Config.Curve is set) as soon as a
// connection is accepted; libzmq sends its greeting in stages and
// waits for ours. Padding bytes 1-8 of the peer's greeting are not validated
// (libzmq puts a length there). The peer must announce major version >= 3
// (higher versions are accepted, as RFC 37 requires) and our mechanism;
// other mechanisms get an ERROR command and are closed; a bad signature or a
// pre-3.0 version is closed without a reply. With NULL, both sides then send READY; ours
// carries Socket-Type "REP". The peer's READY must carry a Socket-Type of REQ
// or DEALER, the peers RFC 28 allows for REP (names and values compared
// case-insensitively); anything else, a missing Socket-Type, or malformed metadata gets an ERROR command
// and is closed. Every length in READY is checked against the bytes that
// remain. The whole handshake must finish within Config.HandshakeTimeout
// (default 5 s); it runs in the connection's goroutine, never in the accept
// loop, so a silent peer delays no one else.
//
// # CurveZMQ
//
// With Config.Curve set the server speaks CURVE (RFC 26; the crypto is in
// package curve) and only CURVE: a NULL or PLAIN peer, or a CURVE peer that
// also claims the server role, gets an ERROR command and is closed. After
// the greeting the peer's HELLO is answered with WELCOME, its INITIATE (the
// cookie, the vouch, then CurveConfig.Allow on its long-term key) with
// READY; both commands are bounded by MaxCommandSize and the handshake
// deadline, and the INITIATE metadata must name a REQ or DEALER socket as
// with NULL. A refused client gets ERROR "400" (not allowed, the ZAP status
// libzmq reports as an authentication failure), "CURVE authentication
// failed" (a box that does not open: usually a wrong server key) or
// "malformed CURVE handshake", then the connection is closed.
//
// After the handshake every frame, both ways, is a MESSAGE command sent as
// a plain frame (as libzmq does); its box holds a flags byte (0x01 MORE,
// 0x02 COMMAND) and the payload. A frame that does not open, or whose short
// nonce does not increase, closes the connection; PING/PONG travel inside
// MESSAGE with the COMMAND flag. Each frame's ciphertext is read whole into
// a second buffer (it can be authenticated only whole), under the same
// accounting as message buffers: 64 KiB of the connection's own, beyond
// that from MaxPartialBytes; the payload is opened into the message buffer.
// Because MORE lives inside the box, a frame must be opened to find where
// its message ends: a single frame over MaxMessageSize, or one the pool
// cannot hold, gets an ERROR and is closed rather than discarded, while a
// message over MaxMessageSize in several frames is still answered with
// ErrMessageTooLarge. Replies are sealed into the ciphertext buffer.
// CurvePerConnectionBytes is the extra a CURVE connection may hold.
//
// # Envelopes
//
// A request's envelope is every frame up to and including the first empty
// frame (the delimiter). A REQ peer's envelope is just the delimiter; a DEALER
// peer may put any number of frames before it. The envelope is
// echoed back unchanged in front of the reply frame, and the Handler sees only
// the frames after it. A message with no empty frame has no envelope: all of
// its frames are the body, and the reply is a single frame with no envelope.
// (A libzmq REQ socket always sends the delimiter; a DEALER that omits it gets
// back exactly what it sent: no envelope.)
//
// # Limits
//
//   - Config.MaxMessageSize (default 1 MiB): the sum of the payload sizes of
//     all frames of one message, envelope included, frame headers not counted.
//     Each frame's declared size is checked before anything is allocated.
//   - MaxFramesPerMessage (256) frames per message, envelope included.
//   - A message over either limit but within Config.DiscardLimit (default
//     64 MiB) is read and thrown away as it streams in, without being stored,
//     and the Handler is called with Request.Err = ErrMessageTooLarge so that
//     a REQ peer still gets exactly one reply. The envelope is echoed if its
//     delimiter arrived before the limit was crossed; otherwise the reply has
//     no envelope.
//   - A message (or a single frame header) beyond DiscardLimit, or one of more
//     than 65536 frames, gets an ERROR command and the connection is closed
//     without reading it: a header claiming 1 TiB allocates nothing.
//   - MaxCommandSize (64 KiB) per command frame (READY, PING, ...); a larger
//     command closes the connection.
//   - Message buffers grow as bytes arrive (doubling from 4 KiB), never to a
//     header's declared size at once: a header claiming 1 MiB followed by
//     silence holds a few KiB. Each connection may hold up to 64 KiB of
//     message buffer of its own (kept between messages, so a 2048-point
//     spectrum costs no allocation and no shared atomic); capacity beyond
//     that is reserved from a pool shared by all connections,
//     Config.MaxPartialBytes (default 64 MiB), before it is allocated, and
//     given back once the reply is written. A message the pool cannot take
//     is streamed to nowhere and the Handler gets Request.Err =
//     ErrPartialBytesExhausted (which wraps ErrMessageTooLarge).
//   - Config.FrameTimeout (default 10 s): once the first byte of a frame
//     arrives, the message (or command) must be complete within it, or the
//     connection is closed (never earlier, at most 200 ms later). A peer
//     idle between messages is not affected. A housekeeping goroutine
//     enforces it a few times a second, so the
//     read path pays one atomic compare-and-swap per phase change and no
//     deadline syscall.
//   - Config.MaxConnections (default 1024) open connections, handshaking ones
//     included. A newcomer at the cap evicts one peer, chosen on admission
//     by a walk over the table: never one in the middle of a message or a
//     request, never one whose latest PING is within its TTL (at most 60 s;
//     30 s when the PING has none), never one that has had a reply within
//     Config.EvictableAfter (default 10 min); among the rest, peers that
//     never had a reply go first, and within each class the one silent the
//     longest (then the earliest admitted). With no candidate, the newcomer
//     is closed at once. A client that sends a request a minute therefore
//     is never evicted, with or without heartbeats.
//   - Config.WriteTimeout (default 10 s) per reply to a peer that does not
//     read; the connection is closed when it expires.
//   - Frames with reserved flag bits set, commands with MORE set, READY after
//     the handshake, an ERROR from the peer, or a malformed PING close the
//     connection. Unknown commands are ignored.
//
// # Heartbeats
//
// A PING (ZMTP 3.1 peers) is answered at once with a PONG echoing its context
// (0-16 bytes), so libzmq clients with ZMQ_HEARTBEAT_IVL set work. A PING with
// a non-zero TTL (ZMQ_HEARTBEAT_TTL on the client) makes the server close the
// connection if no further frame arrives within that TTL while it waits for a
// request; any frame counts. Config.IdleTimeout (default 0: off) does the same
// for all connections; when both are set the shorter applies. The server never
// sends PINGs itself. ZMTP 3.0 peers have no heartbeats: a PING from one is
// ignored like any unknown command.
//
// Requests on one connection are handled one after another (several requests
// pipelined by a DEALER are answered in order), so a PING arriving while a
// request is being handled is answered right after that reply; the reply
// itself already counts as traffic for libzmq's ZMQ_HEARTBEAT_TIMEOUT.
// Connections are served in parallel, one goroutine each.
//
// # Shutdown
//
// Shutdown stops accepting, closes idle connections at once, lets requests
// already being handled finish and their replies be written, then closes their
// connections. Requests a DEALER pipelined behind the one in flight are not
// answered. If Shutdown's context ends first, handler contexts are cancelled
// and all connections are closed. Serve drains the same way, bounded by
// Config.ShutdownTimeout (default 5 s), when its own context is cancelled.
//
// # Robustness
//
// Every connection goroutine recovers panics (including a Handler's): the
// panic is logged with its stack, counted in Stats.Panics, and only that
// connection is closed. Buffers are per connection and reused, so the steady
// state of a request allocates nothing in this package; each reply is written
// with a single Write (except one whose envelope exceeds 16 KiB, written frame
// by frame straight from the message buffer rather than copied).
package zmtp
