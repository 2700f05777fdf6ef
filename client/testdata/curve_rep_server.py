"""A libzmq CURVE REP server for the Go client's interop tests.

Usage: /usr/bin/python3 curve_rep_server.py SECRET_KEY_Z85 [options]
  --null             serve NULL instead of CURVE
  --allow KEY_Z85    accept only these client public keys (ZAP, repeatable)
  --delay SECONDS    wait before each reply
  --heartbeat MS     send ZMTP PINGs every MS milliseconds
  --heartbeat-timeout MS
                     close a connection whose peer has not answered a PING
                     within MS milliseconds (default 2 x --heartbeat)

Prints "PORT <n>" once bound on 127.0.0.1, then answers every request
with b"echo:" + request until killed. Debian's python3-zmq (libzmq built
with libsodium) is the CURVE implementation under test.
"""
import argparse
import time

import zmq
import zmq.auth.thread


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secret", required=True)  # --secret=KEY: a Z85 key may begin with "-"
    ap.add_argument("--null", action="store_true")
    ap.add_argument("--allow", action="append", default=None)
    ap.add_argument("--delay", type=float, default=0)
    ap.add_argument("--heartbeat", type=int, default=0)
    ap.add_argument("--heartbeat-timeout", type=int, default=0)
    args = ap.parse_args()
    assert zmq.has("curve"), "libzmq without CURVE"

    ctx = zmq.Context()
    if args.allow is not None:
        allowed = {k.encode() for k in args.allow}
        auth = zmq.auth.thread.ThreadAuthenticator(ctx)
        auth.start()

        class Keys:
            def callback(self, domain, key):
                return key in allowed

        auth.configure_curve_callback(domain="*", credentials_provider=Keys())
    sock = ctx.socket(zmq.REP)
    if not args.null:
        sock.curve_server = True
        sock.curve_secretkey = args.secret.encode()
    if args.heartbeat:
        sock.heartbeat_ivl = args.heartbeat
        sock.heartbeat_timeout = args.heartbeat_timeout or 2 * args.heartbeat
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    print("PORT", port, flush=True)
    while True:
        msg = sock.recv()
        if args.delay:
            time.sleep(args.delay)
        sock.send(b"echo:" + msg)


if __name__ == "__main__":
    main()
