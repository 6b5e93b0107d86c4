#!/usr/bin/env python3
"""Relays an exact number of ChannelData datagrams both ways through a TURN server.

    bench/turn-fixed-count.py --server 127.0.0.1:3478 --user NAME:PASSWORD --count N
                              [--clients C] [--burst B] [--size BYTES]

C clients (default 1) each allocate a relayed address and bind channel 0x4000 to one peer
socket of this script. Then, in lock step, B ChannelData messages go out (from the clients in
turn: with C > 1 no two consecutive datagrams come from the same client), the peer waits for
all B and sends each back to the relayed address it came from, and the clients wait for the B
ChannelData messages coming back; until N have crossed in each direction. Lock step keeps the
kernel's socket buffers from overflowing however slowly the server runs (valgrind), so the
count is exact. Prints "relayed D lost L": D datagrams crossed the server (both directions).

Standard library only. Used by bench/turn-instructions.sh; it is a measuring tool, not a
TURN client library: long-term credentials with MESSAGE-INTEGRITY (HMAC-SHA1, MD5 key), no
FINGERPRINT, no refreshes (a run is much shorter than the 600 s lifetime).
"""
import argparse
import hashlib
import hmac
import os
import socket
import struct
import sys
import time

COOKIE = 0x2112A442
CHANNEL = 0x4000


def attribute(kind, value):
    return struct.pack("!HH", kind, len(value)) + value + b"\0" * (-len(value) % 4)


def message(kind, tid, attributes, key=None):
    body = b"".join(attributes)
    if key is None:
        return struct.pack("!HHI", kind, len(body), COOKIE) + tid + body
    # MESSAGE-INTEGRITY covers the message with the length already counting itself (RFC 8489 14.5).
    header = struct.pack("!HHI", kind, len(body) + 24, COOKIE) + tid
    mac = hmac.new(key, header + body, hashlib.sha1).digest()
    return header + body + attribute(0x0008, mac)


def parse(data):
    kind, length, cookie = struct.unpack("!HHI", data[:8])
    tid, attrs, offset = data[8:20], {}, 20
    while offset + 4 <= 20 + length:
        a, n = struct.unpack("!HH", data[offset:offset + 4])
        attrs.setdefault(a, data[offset + 4:offset + 4 + n])
        offset += 4 + n + (-n % 4)
    return kind, tid, attrs


def xor_address(host, port):
    return struct.pack("!BBH", 0, 1, port ^ (COOKIE >> 16)) + struct.pack("!I", struct.unpack("!I", socket.inet_aton(host))[0] ^ COOKIE)


def unxor_address(value):
    port = struct.unpack("!H", value[2:4])[0] ^ (COOKIE >> 16)
    address = struct.unpack("!I", value[4:8])[0] ^ COOKIE
    return socket.inet_ntoa(struct.pack("!I", address)), port


class Client:
    def __init__(self, server, user, password):
        self.server, self.user, self.password = server, user, password
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(2.0)
        self.realm = self.nonce = self.key = None

    def ask(self, kind, attributes):
        """A request with credentials once a 401 gave the realm and nonce; the answer's attributes."""
        for attempt in range(60):  # a server under valgrind may start slowly
            tid = os.urandom(12)
            extra = []
            if self.nonce is not None:
                extra = [attribute(0x0006, self.user.encode()), attribute(0x0014, self.realm), attribute(0x0015, self.nonce)]
            self.sock.sendto(message(kind, tid, attributes + extra, self.key), self.server)
            try:
                while True:
                    answer_kind, answer_tid, attrs = parse(self.sock.recv(2048))
                    if answer_tid == tid:
                        break
            except socket.timeout:
                continue
            if answer_kind & 0x0110 == 0x0100:
                return attrs
            code = attrs.get(0x0009, b"\0\0\0\0")
            number = code[2] * 100 + code[3]
            if number in (401, 438) and 0x0015 in attrs:
                self.realm, self.nonce = attrs[0x0014], attrs[0x0015]
                self.key = hashlib.md5(b"%s:%s:%s" % (self.user.encode(), self.realm, self.password.encode())).digest()
                continue
            sys.exit(f"turn-fixed-count: request 0x{kind:04x} refused with {number}")
        sys.exit(f"turn-fixed-count: no answer from {self.server}")

    def set_up(self, peer):
        attrs = self.ask(0x0003, [attribute(0x0019, bytes([17, 0, 0, 0]))])
        self.relayed = unxor_address(attrs[0x0016])
        self.ask(0x0009, [attribute(0x000C, struct.pack("!HH", CHANNEL, 0)), attribute(0x0012, xor_address(*peer))])


def receive(sock, want, deadline):
    """Up to `want` datagrams before `deadline`: (payload, source) pairs."""
    got = []
    while len(got) < want:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            got.append(sock.recvfrom(65536))
        except socket.timeout:
            break
    return got


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--burst", type=int, default=16)
    parser.add_argument("--size", type=int, default=160)
    options = parser.parse_args()
    host, port = options.server.rsplit(":", 1)
    server = (host, int(port))
    user, password = options.user.split(":", 1)

    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    clients = [Client(server, user, password) for _ in range(options.clients)]
    for client in clients:
        client.set_up(peer.getsockname())
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    payload = bytes(range(256)) * (options.size // 256 + 1)
    framed = struct.pack("!HH", CHANNEL, options.size) + payload[:options.size]

    relayed = lost = sent = turn = 0
    while sent < options.count:
        burst = min(options.burst, options.count - sent)
        senders = [clients[(sent + i) % len(clients)] for i in range(burst)]
        for client in senders:
            client.sock.sendto(framed, server)
        sent += burst
        arrived = receive(peer, burst, time.monotonic() + 10)
        relayed += len(arrived)
        lost += burst - len(arrived)
        for data, source in arrived:
            peer.sendto(data, source)
        # Each client waits for as many as came back towards it.
        for client in set(senders):
            expected = sum(1 for _, source in arrived if source == client.relayed)
            back = receive(client.sock, expected, time.monotonic() + 10)
            relayed += len(back)
            lost += expected - len(back)
        turn += 1
    print(f"relayed {relayed} lost {lost}")


if __name__ == "__main__":
    main()
