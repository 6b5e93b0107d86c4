#!/usr/bin/env python3
"""Relay CPU per TURN request (ChannelBind, CreatePermission, Refresh) at N channels per allocation.

    bench/turn-request-cost.py --server HOST:PORT --user NAME:PASSWORD --pid PID --channels N
                               [--requests K] [--peer ADDRESS]

One client allocates and binds N channels, 0x4000 onwards, to N ports of one peer address
(--peer, default 10.74.0.1): one permission that every channel ends with, the case where a
renewed permission moves the most kernel entries. Then it sends K requests of each kind, one
after the other, each waiting for its answer: a ChannelBind refreshing channel i (i = 0, 1, ...
in turn), a CreatePermission for the peer's address, a Refresh of 600 s. The relay's CPU is
the sum of its threads' run time (/proc/PID/task/*/schedstat, nanoseconds) before and after
each kind; per request = the difference over K. Prints one line per kind, and the time the N
ChannelBinds of the set-up took:

    setup N channels: T ms
    channelbind N: U us/request
    ...

Standard library only; the STUN client is bench/turn-fixed-count.py's.
"""
import argparse
import glob
import importlib.util
import os
import socket
import struct
import time

spec = importlib.util.spec_from_file_location("turn_fixed_count", os.path.join(os.path.dirname(__file__), "turn-fixed-count.py"))
turn = importlib.util.module_from_spec(spec)
spec.loader.exec_module(turn)


def relay_cpu_ns(pid):
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended in between
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--channels", type=int, required=True)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--peer", default="10.74.0.1")
    options = parser.parse_args()
    host, port = options.server.rsplit(":", 1)
    user, password = options.user.split(":", 1)
    client = turn.Client((host, int(port)), user, password)
    client.sock.close()
    client.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.sock.bind(("0.0.0.0", 0))
    client.sock.settimeout(2.0)

    client.ask(0x0003, [turn.attribute(0x0019, bytes([17, 0, 0, 0])), turn.attribute(0x000D, struct.pack("!I", 600))])
    peers = [(options.peer, 5000 + i) for i in range(options.channels)]

    def bind(i):
        client.ask(0x0009, [turn.attribute(0x000C, struct.pack("!HH", 0x4000 + i, 0)),
                            turn.attribute(0x0012, turn.xor_address(*peers[i]))])

    started = time.monotonic()
    for i in range(options.channels):
        bind(i)
    print(f"setup {options.channels} channels: {(time.monotonic() - started) * 1000:.1f} ms")

    kinds = [
        ("channelbind", lambda k: bind(k % options.channels)),
        ("createpermission", lambda k: client.ask(0x0008, [turn.attribute(0x0012, turn.xor_address(*peers[k % options.channels]))])),
        ("refresh", lambda k: client.ask(0x0004, [turn.attribute(0x000D, struct.pack("!I", 600))])),
    ]
    for name, request in kinds:
        before = relay_cpu_ns(options.pid)
        for k in range(options.requests):
            request(k)
        spent = relay_cpu_ns(options.pid) - before
        print(f"{name} {options.channels}: {spent / options.requests / 1000:.2f} us/request")


if __name__ == "__main__":
    main()
