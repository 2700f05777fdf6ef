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
    # libzmq drops a connection whose PONG is later than this; on a busy
    # machine 3 intervals (300 ms) passed with the server merely off the
    # CPU. PINGs still flow every interval.
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, max(3 * ivl, 10000))
    sock.setsockopt(zmq.HEARTBEAT_TTL, 10 * ivl)
timeout_ms = int(opts.get("timeout_ms", 3000))
# Without a connection (refused or cut, and no reconnection) a REQ send
# blocks for good: it too gives up after timeout_ms and reports a timeout.
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
        print(json.dumps({"timeout": True, "ms": (time.monotonic() - started) * 1000}), flush=True)
        continue
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
