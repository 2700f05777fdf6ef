package curve

import (
	"errors"
	"testing"
)

// fixedHandshake is a reproducible handshake: the same seeds give the same
// keys and nonces, so seeds recorded from it stay meaningful to the fuzzer.
type fixedHandshake struct {
	p                               parties
	client                          *Client
	server                          *Server
	hello, welcome, initiate, ready []byte
	clientSession, serverSession    *Session
}

func newFixedHandshake(t testing.TB, stopAfter string) *fixedHandshake {
	t.Helper()
	h := &fixedHandshake{p: newParties(t, 42)}
	h.client = NewClient(h.p.serverPub, h.p.clientPub, h.p.clientSec, detRand(43))
	h.server = NewServer(h.p.serverSec, func(k PublicKey) bool { return k == h.p.clientPub }, detRand(44))
	var err error
	if h.hello, err = h.client.Hello(); err != nil || stopAfter == "hello" {
		return h
	}
	if h.welcome, err = h.server.Welcome(h.hello); err != nil {
		t.Fatal(err)
	}
	if h.initiate, err = h.client.Initiate(h.welcome, clientMeta); err != nil || stopAfter == "initiate" {
		return h
	}
	if h.ready, _, _, h.serverSession, err = h.server.Ready(h.initiate, serverMeta); err != nil {
		t.Fatal(err)
	}
	if _, h.clientSession, err = h.client.Ready(h.ready); err != nil {
		t.Fatal(err)
	}
	return h
}

func isSentinel(err error) bool {
	return errors.Is(err, ErrMalformed) || errors.Is(err, ErrAuthentication) || errors.Is(err, ErrNonce) || errors.Is(err, ErrNotAllowed)
}

func FuzzServerWelcome(f *testing.F) {
	h := newFixedHandshake(f, "hello")
	f.Add(h.hello)
	f.Add([]byte("\x05HELLO"))
	f.Fuzz(func(t *testing.T, hello []byte) {
		s := NewServer(h.p.serverSec, nil, detRand(44))
		welcome, err := s.Welcome(hello)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if len(welcome) != WelcomeSize {
			t.Fatalf("WELCOME of %d bytes", len(welcome))
		}
	})
}

func FuzzServerReady(f *testing.F) {
	h := newFixedHandshake(f, "initiate")
	f.Add(h.initiate)
	f.Add(h.initiate[:InitiateMinSize])
	f.Add([]byte("\x08INITIATE"))
	f.Fuzz(func(t *testing.T, initiate []byte) {
		// The same seeds as newFixedHandshake: this server's cookie and
		// short-term keys are the ones h.initiate was made for.
		s := NewServer(h.p.serverSec, func(k PublicKey) bool { return k == h.p.clientPub }, detRand(44))
		if _, err := s.Welcome(h.hello); err != nil {
			t.Fatal(err)
		}
		ready, client, md, sess, err := s.Ready(initiate, serverMeta)
		if err != nil {
			if !isSentinel(err) || ready != nil || sess != nil || md != nil {
				t.Fatalf("refusal %v returned ready=%d bytes session=%v", err, len(ready), sess != nil)
			}
			return
		}
		if client != h.p.clientPub || len(md) > MaxMetadataSize || len(ready) != ReadyMinSize+len(serverMeta) {
			t.Fatalf("accepted INITIATE: client %s, %d bytes of metadata", client, len(md))
		}
	})
}

func FuzzClientReady(f *testing.F) {
	h := newFixedHandshake(f, "")
	f.Add(h.ready)
	f.Add([]byte("\x05READY"))
	f.Fuzz(func(t *testing.T, ready []byte) {
		c := NewClient(h.p.serverPub, h.p.clientPub, h.p.clientSec, detRand(43))
		if _, err := c.Hello(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Initiate(h.welcome, clientMeta); err != nil {
			t.Fatal(err)
		}
		md, sess, err := c.Ready(ready)
		if err != nil {
			if !isSentinel(err) || sess != nil {
				t.Fatalf("refusal %v with a session", err)
			}
			return
		}
		if len(md) > MaxMetadataSize {
			t.Fatalf("%d bytes of metadata", len(md))
		}
	})
}

func FuzzSessionOpen(f *testing.F) {
	h := newFixedHandshake(f, "")
	for _, payload := range [][]byte{nil, []byte("spectrum"), []byte("\x04PING\x00\x0a")} {
		body, err := h.clientSession.Seal(nil, FlagMore, payload)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add([]byte("\x07MESSAGE\x00\x00\x00\x00\x00\x00\x00\x05"))
	f.Fuzz(func(t *testing.T, body []byte) {
		ss := *h.serverSession // a fresh copy: each input is the first message
		prefix := []byte("kept")
		flags, payload, err := ss.Open(prefix, body)
		if err != nil {
			if !isSentinel(err) || ss.peerNonce != h.serverSession.peerNonce {
				t.Fatalf("refusal %v moved the nonce to %d", err, ss.peerNonce)
			}
			return
		}
		if string(payload[:4]) != "kept" || len(payload) != 4+len(body)-MessageOverhead || flags&^(FlagMore|FlagCommand) != 0 {
			t.Fatalf("opened: flags %#x, %d bytes from a %d-byte body", flags, len(payload), len(body))
		}
	})
}
