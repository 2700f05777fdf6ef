"""A long-lived libzmq REQ client (pyzmq) for the connection-bound tests.

Run by conformance/channel_bounds_test.go. argv[1] is a JSON object:

    {"endpoint": "tcp://127.0.0.1:5555", "heartbeat_ms": 0 or 100,
     "timeout_ms": 3000}

Each line on stdin is a command, answered by one JSON line on stdout:

    ping     a ping request: {"type", "ok", "ms"}
    predict  a 2048-point predict (about 37 KiB): {"type", "code", "ms"}
    quit     close and exit

"ms" runs from connect() for the first command and from send() after
that, to the reply. Reconnection is off: a connection the server cuts
shows up as a timeout instead of being quietly replaced.
"""
import json
import random
import sys
import time
import uuid

import msgpack
import zmq

opts = json.loads(sys.argv[1])
ctx = zmq.Context()
sock = ctx.socket(zmq.REQ)
sock.setsockopt(zmq.LINGER, 0)
sock.setsockopt(zmq.RECONNECT_IVL, -1)
if opts.get("heartbeat_ms"):
    ivl = int(opts["heartbeat_ms"])
    sock.setsockopt(zmq.HEARTBEAT_IVL, ivl)
    # A PONG later than this drops the connection (and, reconnection being
    # off, the session): on a machine busy with other work the server may
    # answer a PING later than a few intervals without being at fault.
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, max(3 * ivl, 10000))
    # The TTL asks the server to drop the connection after that long
    # without a byte from us: as generous as the timeout, for the same
    # reason.
    sock.setsockopt(zmq.HEARTBEAT_TTL, max(10 * ivl, 10000))
timeout_ms = int(opts.get("timeout_ms", 3000))
# A REQ socket without a peer blocks in send; with reconnection off, a cut
# connection would block it for ever. The send waits timeout_ms at most.
sock.setsockopt(zmq.SNDTIMEO, timeout_ms)

wavenumbers = [400.0 + 1.5 * k for k in range(2048)]
rng = random.Random(7)
intensities = [1000.0 + rng.random() for _ in range(2048)]


def envelope(kind, body=None):
    msg = {"v": 1, "type": kind, "id": str(uuid.uuid4()), "ts": time.time()}
    if body is not None:
        msg["body"] = body
    return msg


first = True
started = time.monotonic()
sock.connect(opts["endpoint"])
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "quit":
        break
    if cmd == "ping":
        msg = envelope("ping")
    elif cmd == "predict":
        msg = envelope("predict", {
            "spectrum": {"wavenumbers": wavenumbers, "intensities": intensities,
                         "channel": 1, "integration_ms": 500, "scan_seq": 1},
            "context": {"batch_id": "B-1", "port": "P1", "column_index": 1}})
    else:
        print(json.dumps({"unknown": cmd}), flush=True)
        continue
    if not first:
        started = time.monotonic()
    first = False
    try:
        sock.send(msgpack.packb(msg, use_bin_type=True))
    except zmq.Again:
        # No connection to send on: reported as a timeout, and the
        # session ends (a REQ socket that did not send cannot go on).
        print(json.dumps({"timeout": True, "unsent": True,
                          "ms": (time.monotonic() - started) * 1000}), flush=True)
        break
    out = {}
    if sock.poll(timeout_ms):
        rep = msgpack.unpackb(sock.recv(), raw=False)
        err = rep.get("error") or {}
        out = {"type": rep.get("type"), "ok": rep.get("correlation_id") == msg["id"],
               "code": err.get("code")}
    else:
        out = {"timeout": True}
    out["ms"] = (time.monotonic() - started) * 1000
    print(json.dumps(out), flush=True)
sock.close()
ctx.term()
