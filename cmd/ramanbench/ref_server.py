"""Python reference prediction server for `make bench`.

The baseline the Go server is measured against: a pyzmq REP socket
(libzmq), msgpack envelopes as in api/messages.md, and scikit-learn's own
PLSRegression.predict on the same .joblib model the Go server imports. It
computes no diagnostics and no confidence (it reports 1.0), so it does less
work per request than ramanserve.

Usage: /usr/bin/python3 ref_server.py ENDPOINT MODEL.joblib
Prints READY once bound; serves until killed.
"""
import sys
import time
import uuid

import joblib
import msgpack
import numpy as np
import zmq

ANALYTES = ("EPA", "DHA", "DPA")


def reply(req, typ, body, error=None):
    return {
        "v": 1,
        "type": typ,
        "id": str(uuid.uuid4()),
        "correlation_id": req.get("id", "") if isinstance(req, dict) else "",
        "ts": time.time(),
        "body": body,
        "error": error,
    }


def main():
    endpoint, model_path = sys.argv[1], sys.argv[2]
    model = joblib.load(model_path)
    sock = zmq.Context.instance().socket(zmq.REP)
    sock.bind(endpoint)
    print("READY", flush=True)
    started = time.time()
    while True:
        raw = sock.recv()
        t0 = time.perf_counter()
        try:
            req = msgpack.unpackb(raw, raw=False)
            typ = req.get("type")
            if typ == "predict":
                x = np.asarray(req["body"]["spectrum"]["intensities"], dtype=np.float64).reshape(1, -1)
                y = model.predict(x).reshape(-1)
                out = reply(req, "predict_reply", {
                    "concentrations": {a: float(v) for a, v in zip(ANALYTES, y)},
                    "confidence": {a: 1.0 for a in ANALYTES},
                    "model_version": "python-reference",
                    "inference_ms": (time.perf_counter() - t0) * 1000.0,
                })
            elif typ == "ping":
                out = reply(req, "pong", {"server_version": "python-reference", "protocol_version": 1,
                                          "model_version": "python-reference",
                                          "uptime_seconds": time.time() - started})
            else:
                out = reply(req, "error", {}, {"code": "UNKNOWN_TYPE", "message": str(typ), "retryable": False})
        except Exception as exc:  # the reference must answer every request
            out = reply({}, "error", {}, {"code": "MALFORMED_MESSAGE", "message": str(exc), "retryable": False})
        sock.send(msgpack.packb(out, use_bin_type=True))


if __name__ == "__main__":
    main()
