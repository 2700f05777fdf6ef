"""pyzmq side of `ramanbench -curve`: the CURVE round-trip overhead.

The real libzmq client (Debian's python3-zmq, libzmq built with
libsodium) sends the same 2048-point predict requests to two ramanserve
endpoints serving the same model, one NULL and one CURVE, alternating
blocks of requests between them so that both see the same machine load.

Usage: /usr/bin/python3 curve_client.py FRAMES NULL_ENDPOINT CURVE_ENDPOINT SERVER_PUBLIC_KEY SECONDS BLOCK WARMUP

FRAMES holds the encoded requests, each a 4-byte big-endian length and
the frame. Prints one JSON object: the round-trip times in nanoseconds
of each endpoint, {"null": [...], "curve": [...]}, and the process's CPU
time (libzmq's I/O thread included) over each endpoint's blocks,
"nullcpu" and "curvecpu", in nanoseconds.
"""
import json
import struct
import sys
import time

import msgpack
import zmq


def read_frames(path):
    frames = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        (n,) = struct.unpack_from(">I", data, pos)
        frames.append(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    return frames


def check(reply):
    rep = msgpack.unpackb(reply, raw=False)
    if rep.get("error") is not None or rep.get("type") != "predict_reply":
        raise SystemExit("unexpected reply: %r" % (rep.get("error") or rep.get("type")))


def main():
    frames_path, null_ep, curve_ep, server_key, seconds, block, warmup = sys.argv[1:8]
    assert zmq.has("curve"), "libzmq without CURVE"
    frames = read_frames(frames_path)
    ctx = zmq.Context()
    null = ctx.socket(zmq.REQ)
    null.connect(null_ep)
    curve = ctx.socket(zmq.REQ)
    public, secret = zmq.curve_keypair()
    curve.curve_publickey = public
    curve.curve_secretkey = secret
    curve.curve_serverkey = server_key.encode()
    curve.connect(curve_ep)
    socks = (("null", null), ("curve", curve))
    for _, s in socks:  # warm-up, and a check that both answer predicts
        for i in range(int(warmup)):
            s.send(frames[i % len(frames)])
            check(s.recv())
    lat = {"null": [], "curve": []}
    cpu = {"null": 0, "curve": 0}
    block = int(block)
    end = time.monotonic() + float(seconds)
    k = 0
    while time.monotonic() < end:
        for name, s in socks:
            out = lat[name]
            cpu0 = time.process_time_ns()
            for _ in range(block):
                frame = frames[k % len(frames)]
                k += 1
                t0 = time.perf_counter_ns()
                s.send(frame)
                reply = s.recv()
                out.append(time.perf_counter_ns() - t0)
            cpu[name] += time.process_time_ns() - cpu0
            check(reply)
    json.dump({"null": lat["null"], "curve": lat["curve"], "nullcpu": cpu["null"], "curvecpu": cpu["curve"]}, sys.stdout)


if __name__ == "__main__":
    main()
