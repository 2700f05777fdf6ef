"""A libzmq CURVE REP server (Debian's python3-zmq) for server/zmtp's
interop test of package curve's client side. Reads the server's secret key
(Z85) on stdin, binds 127.0.0.1 on a free port, prints the port, answers
each request with "libzmq:" + the request, and exits after count requests
(argv[1]) or 10 s.
"""
import sys

import zmq

secret = sys.stdin.readline().strip().encode()
count = int(sys.argv[1])
ctx = zmq.Context()
sock = ctx.socket(zmq.REP)
sock.setsockopt(zmq.LINGER, 0)
sock.curve_server = True
sock.curve_secretkey = secret
port = sock.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
for _ in range(count):
    if not sock.poll(10000):
        break
    msg = sock.recv()
    sock.send(b"libzmq:" + msg)
sock.close()
ctx.term()
