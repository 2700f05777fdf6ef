"""Prediction-channel scenarios driven by a real libzmq REQ socket (pyzmq).

Run by conformance/channel_test.go with Debian's python3-zmq and
python3-msgpack. Reads a JSON job on stdin:

    {"endpoint": "tcp://127.0.0.1:5555", "heartbeat_ms": 0 or 100,
     "wavenumbers": [...], "intensities": [...], "scenarios": ["ping", ...]}

and prints one JSON object: scenario name -> what came back
({"type", "v", "correlation_ok", "code", "retryable", "body"}).
Every scenario uses the same REQ socket, so a missing or extra reply
breaks every scenario after it.
"""
import json
import math
import sys
import time
import uuid

import msgpack
import zmq

job = json.load(sys.stdin)
wn = job["wavenumbers"]
intens = job["intensities"]

ctx = zmq.Context()
sock = ctx.socket(zmq.REQ)
sock.setsockopt(zmq.LINGER, 0)
if job.get("heartbeat_ms"):
    ivl = int(job["heartbeat_ms"])
    sock.setsockopt(zmq.HEARTBEAT_IVL, ivl)
    # A PONG that comes later than this drops the connection and with it
    # the pending reply. The server answers a PING once it has dealt with
    # the frame before it: for the million-point spectrum that took more
    # than 300 ms (3 intervals) under -race on a busy machine. PINGs still
    # flow every interval, between scenarios too.
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, max(3 * ivl, 10000))
    # The TTL asks the server to drop the connection after that long
    # without a byte from us; a request in flight is lost with it. Under a
    # second make test this process may not get a core for a second, so
    # the TTL is as generous as the timeout above.
    sock.setsockopt(zmq.HEARTBEAT_TTL, max(10 * ivl, 10000))
sock.connect(job["endpoint"])


def envelope(kind, body=None, **over):
    msg = {"v": 1, "type": kind, "id": str(uuid.uuid4()), "ts": time.time()}
    if body is not None:
        msg["body"] = body
    msg.update(over)
    return msg


def predict_body(w=None, i=None):
    return {"spectrum": {"wavenumbers": wn if w is None else w,
                         "intensities": intens if i is None else i,
                         "channel": 1, "integration_ms": 500, "scan_seq": 7},
            "context": {"batch_id": "B-1", "port": "P1", "column_index": 2}}


def mixed_ints(values):
    # Python packs 1 as an int and 1.0 as a float; a real list mixes them.
    return [int(v) if k % 2 == 0 else float(v) for k, v in enumerate(values)]


def roundtrip(frame, want_id):
    sock.send(frame)
    # Every scenario expects a reply: the bound only stops a hung run, and
    # is generous for a server under -race on a busy machine.
    if not sock.poll(60000):
        return {"timeout": True}
    rep = msgpack.unpackb(sock.recv(), raw=False)
    err = rep.get("error")
    return {
        "type": rep.get("type"),
        "v": rep.get("v"),
        "correlation_ok": rep.get("correlation_id") == want_id,
        "correlation_id": rep.get("correlation_id"),
        "has_id": isinstance(rep.get("id"), str) and len(rep.get("id")) > 0,
        "ts_is_float": isinstance(rep.get("ts"), float),
        "code": err.get("code") if err else None,
        "retryable": err.get("retryable") if err else None,
        "message": err.get("message") if err else None,
        "body": rep.get("body"),
        "reply": rep,
    }


def send_msg(msg):
    return roundtrip(msgpack.packb(msg, use_bin_type=True), msg.get("id"))


def send_raw(frame):
    return roundtrip(frame, "")


nan_intens = list(intens)
nan_intens[10] = float("nan")
inf_intens = list(intens)
inf_intens[20] = float("inf")
shifted = [w + 60.0 for w in wn]

scenarios = {
    "ping": lambda: send_msg(envelope("ping")),
    "model_info": lambda: send_msg(envelope("model_info")),
    "predict": lambda: send_msg(envelope("predict", predict_body())),
    "predict_mixed_ints": lambda: send_msg(envelope("predict", predict_body(i=mixed_ints(intens)))),
    "wrong_v": lambda: send_msg(envelope("ping", v=2)),
    "unknown_type": lambda: send_msg(envelope("reboot")),
    "missing_id": lambda: (lambda m: (m.pop("id"), send_raw(msgpack.packb(m, use_bin_type=True)))[1])(envelope("ping")),
    "not_a_map": lambda: send_raw(msgpack.packb([1, 2, 3])),
    "truncated": lambda: send_raw(msgpack.packb(envelope("predict", predict_body()), use_bin_type=True)[:1000]),
    "garbage": lambda: send_raw(b"\xc1\xc1 definitely not msgpack"),
    "nan": lambda: send_msg(envelope("predict", predict_body(i=nan_intens))),
    "inf": lambda: send_msg(envelope("predict", predict_body(i=inf_intens))),
    "string_in_array": lambda: send_msg(envelope("predict", predict_body(i=["x"] + intens[1:]))),
    "short": lambda: send_msg(envelope("predict", predict_body(w=wn[:100], i=intens[:100]))),
    "unequal": lambda: send_msg(envelope("predict", predict_body(i=intens[:-1]))),
    "decreasing": lambda: send_msg(envelope("predict", predict_body(w=wn[::-1]))),
    "shifted_axis": lambda: send_msg(envelope("predict", predict_body(w=shifted))),
    "million": lambda: send_msg(envelope("predict", predict_body(i=[0] * 1000000))),
    "too_large": lambda: send_msg(envelope("predict", predict_body(i=[0.5] * 200000))),
}

out = {}
for name in job["scenarios"]:
    out[name] = scenarios[name]()
    if job.get("heartbeat_ms"):
        # Stay idle for several heartbeat intervals so PING/PONG really flow
        # between requests.
        time.sleep(5 * job["heartbeat_ms"] / 1000.0)
print(json.dumps(out))
sock.close()
ctx.term()
