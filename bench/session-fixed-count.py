#!/usr/bin/env python3
"""Sends an exact number of datagrams through one relay session, in lock-step bursts.

    bench/session-fixed-count.py --http 127.0.0.1:9480 --count N [--session JSON] [--tos T]
                                 [--burst B] [--size BYTES] [--wait-ms MS]

Creates a session (POST /v1/sessions with the --session body), latches its leg B with one
datagram from a receiving socket, then sends N datagrams from another socket to leg A in bursts
of B (default 16), each marked with TOS byte T, waiting after each burst until the B datagrams
have come out of leg B or --wait-ms (default 20) has passed: a burst the relay drops or marks in
part (a session over its limit) only costs the wait. Lock step keeps the socket buffers from
overflowing however slowly the relay runs (valgrind), so every datagram sent reaches it.
Prints "sent S forwarded F marked M": M arrived with CE.

Standard library only. Used by bench/session-instructions.sh.
"""
import argparse
import json
import select
import socket
import sys
import time
import urllib.request


def request(http, method, path, body=None):
    data = body.encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request("http://" + http + path, data=data, method=method), timeout=60) as answer:
        return json.loads(answer.read().decode() or "{}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--session", default="{}")
    parser.add_argument("--tos", type=int, default=0)
    parser.add_argument("--burst", type=int, default=16)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--wait-ms", type=float, default=20)
    args = parser.parse_args()

    session = request(args.http, "POST", "/v1/sessions", args.session)
    leg_a = (session["legs"][0]["address"], session["legs"][0]["port"])
    leg_b = (session["legs"][1]["address"], session["legs"][1]["port"])
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, args.tos)
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    for sock in (sender, receiver):
        sock.bind(("127.0.0.1", 0))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    receiver.sendto(b"latch", leg_b)
    deadline = time.monotonic() + 60
    while request(args.http, "GET", "/v1/sessions/" + session["id"])["legs"][1]["latched"] is None:
        if time.monotonic() > deadline:
            sys.exit("leg B never latched")
        time.sleep(0.05)

    payload = b"\x4d" * args.size
    sent = forwarded = marked = 0
    while sent < args.count:
        burst = min(args.burst, args.count - sent)
        for _ in range(burst):
            sender.sendto(payload, leg_a)
        sent += burst
        arrived = 0
        until = time.monotonic() + args.wait_ms / 1000
        while arrived < burst:
            left = until - time.monotonic()
            if left <= 0 or not select.select([receiver], [], [], left)[0]:
                break
            _, ancillary, _, _ = receiver.recvmsg(4096, 64)
            arrived += 1
            for level, kind, data in ancillary:
                if level == socket.IPPROTO_IP and kind == socket.IP_TOS and data[0] & 3 == 3:
                    marked += 1
        forwarded += arrived
    print("sent %d forwarded %d marked %d" % (sent, forwarded, marked))


if __name__ == "__main__":
    main()
