"""A libzmq REQ client (Debian's python3-zmq) for the CURVE tests.

Run by server/zmtp/curve_test.go and server/channel/curve_test.go. Reads a
JSON job on stdin:

    {"endpoint": "tcp://127.0.0.1:5555",
     "server_key": Z85 or null (null: NULL mechanism),
     "public": Z85, "secret": Z85,          (the client's long-term pair)
     "heartbeat_ms": 0 or an interval (ZMQ_HEARTBEAT_IVL),
     "heartbeat_timeout_ms": ZMQ_HEARTBEAT_TIMEOUT (3 intervals if 0),
     "heartbeat_ttl_ms": ZMQ_HEARTBEAT_TTL (10 intervals if 0),
     "pause_ms": sleep between requests,
     "timeout_ms": how long to wait for each reply,
     "requests": [base64 frame, ...]}

and prints one JSON object: {"replies": [base64 or null, ...],
"events": [[name, value], ...]} where events are the socket monitor's
handshake and connection events, in order. A request that gets no reply
within timeout_ms ends the run (a REQ socket cannot send again).
"""
import base64
import json
import sys
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

job = json.load(sys.stdin)
ctx = zmq.Context()
sock = ctx.socket(zmq.REQ)
sock.setsockopt(zmq.LINGER, 0)
sock.setsockopt(zmq.RECONNECT_IVL, 200)
if job.get("server_key"):
    sock.setsockopt(zmq.CURVE_SERVERKEY, job["server_key"].encode())
    sock.setsockopt(zmq.CURVE_PUBLICKEY, job["public"].encode())
    sock.setsockopt(zmq.CURVE_SECRETKEY, job["secret"].encode())
if job.get("heartbeat_ms"):
    ivl = int(job["heartbeat_ms"])
    sock.setsockopt(zmq.HEARTBEAT_IVL, ivl)
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(job.get("heartbeat_timeout_ms") or 3 * ivl))
    sock.setsockopt(zmq.HEARTBEAT_TTL, int(job.get("heartbeat_ttl_ms") or 10 * ivl))
mon = sock.get_monitor_socket()
sock.connect(job["endpoint"])

names = {getattr(zmq, n): n for n in dir(zmq) if n.startswith("EVENT_") and n != "EVENT_ALL"}
events = []


def drain_events():
    while mon.poll(0):
        ev = recv_monitor_message(mon)
        events.append([names.get(ev["event"], str(ev["event"])), ev["value"]])


replies = []
for i, frame in enumerate(job["requests"]):
    if i > 0 and job.get("pause_ms"):
        time.sleep(job["pause_ms"] / 1000.0)
    sock.send(base64.b64decode(frame))
    if not sock.poll(job.get("timeout_ms", 5000)):
        replies.append(None)
        break
    replies.append(base64.b64encode(sock.recv()).decode())
    drain_events()

time.sleep(0.05)
drain_events()
sock.disable_monitor()
# Every socket, the monitor's included, closed without lingering: a
# refused client's request is never delivered, and a monitor event may
# still be in flight, either of which could hold ctx.term() for ever.
ctx.destroy(linger=0)
print(json.dumps({"replies": replies, "events": events}))
