// Package curve implements CurveZMQ (ZeroMQ RFC 26) without doing any I/O:
// the HELLO/WELCOME/INITIATE/READY handshake for both sides, the MESSAGE
// framing of an established session, Z85 (RFC 32) and the key files.
//
// Callers read and write ZMTP command frames themselves; every body this
// package takes or returns is a whole command body, name included (for
// example "\x05HELLO" followed by its fields), laid out exactly as RFC 26
// says:
//
//	HELLO    "\x05HELLO" 1 0 [72 zero bytes] C' nonce(8) Box[64 zero bytes](C'->S)          200 bytes
//	WELCOME  "\x07WELCOME" nonce(16) Box[S' + cookie](S->C')                                  168 bytes
//	         cookie = nonce(16) SecretBox[C' + s'](K)
//	INITIATE "\x08INITIATE" cookie(96) nonce(8) Box[C + vouch + metadata](C'->S')             257+ bytes
//	         vouch = nonce(16) Box[C' + S](C->S')
//	READY    "\x05READY" nonce(8) Box[metadata](S'->C')                                       30+ bytes
//	MESSAGE  "\x07MESSAGE" nonce(8) Box[flags + payload](C'->S' or S'->C')                   33+ bytes
//
// Long nonces (16 bytes) are random and carry the prefixes "WELCOME-",
// "COOKIE--" and "VOUCH---"; short nonces (8 bytes, big-endian) are a
// counter per direction that starts at 1 and carry the prefixes
// "CurveZMQHELLO---", "CurveZMQINITIATE", "CurveZMQREADY---",
// "CurveZMQMESSAGEC" (client to server) and "CurveZMQMESSAGES" (server to
// client). A short nonce is never reused by the sender, and the receiver
// refuses one that is not greater than the last it accepted (HELLO and
// INITIATE included), so a replayed or reordered command is rejected.
//
// The flags byte inside a MESSAGE box carries bit 0x01 MORE and bit 0x02
// COMMAND (libzmq's msg_t::more and msg_t::command; RFC 26 names only MORE,
// libzmq 4.2+ uses COMMAND for ZMTP 3.1 PING/PONG sent over an encrypted
// session). The ZMTP frame that carries a MESSAGE has neither MORE nor
// COMMAND set on the wire: multipart structure lives inside the box.
//
// # Cookie
//
// The server keeps no state for the client between WELCOME and INITIATE
// beyond what RFC 26 puts in the cookie, but since a Server serves exactly one
// connection its cookie key is a fresh random key per Server (per
// connection), wiped once INITIATE has been checked. That is simpler than a
// rotating process-wide key and strictly stronger: a cookie is valid only on
// the connection that received it and only once, so it cannot be replayed on
// another connection or after the handshake.
//
// # Sizes
//
// HELLO and WELCOME have fixed sizes. INITIATE and READY carry metadata,
// bounded here by MaxMetadataSize; callers bound the frames they read before
// handing them over. A Session's Seal and Open append to caller buffers
// and keep none of their own, so the per-message path allocates only when
// a caller's buffer is too small.
//
// # Speed
//
// MESSAGE boxes go through package internal/secretbox, XSalsa20-Poly1305
// with x/crypto's output whose Salsa20 and Poly1305 run several blocks
// side by side in AVX-512 registers where the processor has them: for a
// 37 KiB predict they were nearly all of a CURVE connection's cost. The
// handshake's boxes are small and stay with x/crypto.
package curve
