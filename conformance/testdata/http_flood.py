"""Attack the management port from a process of its own, the way a client
elsewhere on the network would: SILENT connections that never send a byte
and connect again as soon as the server closes them, and SLOW clients that
send a JSON request's header and then one body byte every 10 s.

usage: http_flood.py HOST:PORT SILENT SLOW SECONDS
Prints one line: how many silent connections were opened, after SECONDS or
at SIGTERM, whichever comes first.
"""
import os
import signal
import socket
import sys
import threading
import time

host, port = sys.argv[1].rsplit(":", 1)
port = int(port)
silent, slow, seconds = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
end = time.time() + seconds
opened = [0]
lock = threading.Lock()


def silent_client():
    while time.time() < end:
        try:
            s = socket.create_connection((host, port), timeout=2)
        except OSError:
            time.sleep(0.01)
            continue
        with lock:
            opened[0] += 1
        s.settimeout(max(0.1, end - time.time()))
        try:
            s.recv(4096)  # until the server closes it
        except OSError:
            pass
        s.close()


def slow_client():
    head = b"POST /model/load HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
    while time.time() < end:
        try:
            s = socket.create_connection((host, port), timeout=2)
            s.sendall(head)
            while time.time() < end:
                s.settimeout(min(10, max(0.1, end - time.time())))
                try:
                    if not s.recv(4096):
                        break  # closed: connect again
                except socket.timeout:
                    s.sendall(b" ")
                    continue
                break  # answered (408, 503): connect again
            s.close()
        except OSError:
            time.sleep(0.1)


def stop(*_):
    print(opened[0], flush=True)
    os._exit(0)


signal.signal(signal.SIGTERM, stop)
threads = [threading.Thread(target=silent_client, daemon=True) for _ in range(silent)]
threads += [threading.Thread(target=slow_client, daemon=True) for _ in range(slow)]
for t in threads:
    t.start()
while time.time() < end:
    time.sleep(0.2)
print(opened[0], flush=True)
