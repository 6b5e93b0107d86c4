#!/usr/bin/env python3
"""Soak test: does the relay come back to where it started after long mixed load?

Starts a release mediarelay with one forward rule and, for --seconds (default 600), keeps up
at the same time:
  - steady media: mediarelay-load with 20 voice sessions (50 datagrams/s each way per stream);
  - session churn: about --rate sessions/s created (2-4 legs, a quarter of them "rtcp": "pair",
    every relatch policy), each latched and carrying a few datagrams; most deleted ~2 s later,
    one in ten left to expire by idle_timeout_seconds instead;
  - forward-rule client churn: a new client (a new source port) every 50 ms sends a few
    datagrams to the rule and reads the upstream's echoes, then goes away; the relay expires
    its upstream socket after --idle-timeout.
Every 10 s it samples the relay's RSS and open descriptors (/proc/PID) and its port-range
occupancy, sessions and forward clients (/v1/stats). When the load stops it waits until every
session and client is gone and samples again. Prints a Markdown table; writes every sample to
--csv. Exit 0 when descriptors and ports are back to their start figures and RSS at the end of
the load is within --rss-tolerance of RSS after the first minute (allocator warm-up), else 1.

Not part of `make test` (it takes minutes). Usage from the repository root, after
`swift build -c release`:  bench/soak.py [--seconds 600] [--rate 50]
"""
import argparse
import collections
import csv
import http.client
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

SAMPLE_EVERY = 10.0


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=600, help="duration of the load [600]")
    parser.add_argument("--rate", type=float, default=50, help="sessions created (and deleted) per second [50]")
    parser.add_argument("--server", default=".build/release/mediarelay")
    parser.add_argument("--load", default=".build/release/mediarelay-load")
    parser.add_argument("--ports", default="30000-31999")
    parser.add_argument("--idle-timeout", type=int, default=5, help="forward clients' idle timeout, s [5]")
    parser.add_argument("--csv", default="bench/results/soak.csv")
    parser.add_argument("--rss-tolerance", type=float, default=0.10, help="allowed RSS growth after warm-up [0.10]")
    return parser.parse_args()


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Relay:
    """The mediarelay under test, its stderr kept in memory and its control API."""

    def __init__(self, args, listen, upstream):
        command = [args.server, "--http", "127.0.0.1:0", "--ports", args.ports, "--workers", "2",
                   "--forward", f"127.0.0.1:{listen}=127.0.0.1:{upstream}",
                   "--idle-timeout", str(args.idle_timeout), "--log-level", "warning"]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        self.log = []
        port = None
        for line in self.process.stderr:
            self.log.append(line)
            match = re.search(r"http listening on 127\.0\.0\.1:(\d+)", line)
            if match:
                port = int(match.group(1))
                break
        if port is None:
            sys.exit("soak: the relay did not start:\n" + "".join(self.log))
        self.http_port = port
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.process.stderr:
            self.log.append(line)

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=10)

    def stats(self):
        connection = self.connection()
        connection.request("GET", "/v1/stats")
        stats = json.loads(connection.getresponse().read())
        connection.close()
        return stats

    def sample(self, phase, started):
        with open(f"/proc/{self.process.pid}/status") as status:
            rss = int(re.search(r"VmRSS:\s+(\d+) kB", status.read()).group(1))
        descriptors = len(os.listdir(f"/proc/{self.process.pid}/fd"))
        stats = self.stats()
        return {"phase": phase, "t_s": round(time.monotonic() - started, 1), "rss_kib": rss, "fds": descriptors,
                "ports_in_use": stats["ports_in_use"], "sessions": stats["sessions"],
                "forward_clients": stats["forward_clients"], "packets_in": stats["packets_in"],
                "sessions_created": stats["sessions_created"], "sessions_deleted": stats["sessions_deleted"],
                "sessions_expired": stats["sessions_expired"], "clients_created": stats["forward_clients_created"],
                "clients_expired": stats["forward_clients_expired"]}

    def stop(self):
        self.process.terminate()
        return self.process.wait(timeout=30)


def echo_upstream(sock, stop):
    """The forward rule's upstream: echoes every datagram to where it came from."""
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            data, source = sock.recvfrom(65535)
            sock.sendto(data, source)
        except socket.timeout:
            pass


def session_churn(relay, rate, stop, counts):
    """Creates about `rate` sessions/s and deletes them ~2 s later (one in ten left to expire)."""
    connection = relay.connection()
    peers = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(4)]
    for peer in peers:
        peer.bind(("127.0.0.1", 0))
        peer.setblocking(False)
    live = collections.deque()
    generator = random.Random(9)
    interval = 1.0 / rate
    next_create = time.monotonic()

    def call(method, path, body=None):
        nonlocal connection
        try:
            connection.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
            response = connection.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = relay.connection()
            counts["http_errors"] += 1
            return None, b""

    while not stop.is_set():
        now = time.monotonic()
        if now >= next_create:
            next_create += interval
            legs = generator.choice([2, 2, 3, 4])
            expire = generator.random() < 0.1
            body = {"legs": legs, "idle_timeout_seconds": 2 if expire else 10,
                    "relatch": generator.choice(["same_address", "any", "never"])}
            if generator.random() < 0.25:
                body["rtcp"] = "pair"
            status, reply = call("POST", "/v1/sessions", json.dumps(body))
            if status == 201:
                counts["created"] += 1
                session = json.loads(reply)
                for index, leg in enumerate(session["legs"]):
                    peers[index].sendto(b"latch", (leg["address"], leg["port"]))
                peers[0].sendto(b"media" * 20, (session["legs"][0]["address"], session["legs"][0]["port"]))
                if not expire:
                    live.append((now + 2.0, session["id"]))
            elif status is not None:
                counts[f"create_{status}"] += 1
        while live and live[0][0] <= now:
            _, identifier = live.popleft()
            status, _ = call("DELETE", f"/v1/sessions/{identifier}")
            counts["deleted" if status == 204 else f"delete_{status}"] += 1
        for peer in peers:  # what the sessions forwarded; only read to keep the buffers empty
            try:
                while True:
                    peer.recv(65535)
            except BlockingIOError:
                pass
        time.sleep(max(0.0, min(next_create - time.monotonic(), 0.01)))
    for _, identifier in live:
        call("DELETE", f"/v1/sessions/{identifier}")
    connection.close()
    for peer in peers:
        peer.close()


def client_churn(listen, stop, counts):
    """A new forward-rule client every 50 ms: three datagrams, their echoes, then gone."""
    while not stop.is_set():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
            client.settimeout(0.5)
            for _ in range(3):
                client.sendto(b"x" * 160, ("127.0.0.1", listen))
            try:
                for _ in range(3):
                    client.recv(2048)
                    counts["client_echoes"] += 1
            except socket.timeout:
                counts["client_echo_timeouts"] += 1
        counts["clients"] += 1
        time.sleep(0.05)


def main():
    args = parse_arguments()
    listen = free_udp_port()
    upstream_socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    upstream_socket.bind(("127.0.0.1", 0))
    relay = Relay(args, listen, upstream_socket.getsockname()[1])
    started = time.monotonic()
    samples = [relay.sample("start (idle)", started)]
    stop_load = threading.Event()
    stop_upstream = threading.Event()
    counts = collections.Counter()
    threads = [threading.Thread(target=echo_upstream, args=(upstream_socket, stop_upstream)),
               threading.Thread(target=session_churn, args=(relay, args.rate, stop_load, counts)),
               threading.Thread(target=client_churn, args=(listen, stop_load, counts))]
    for thread in threads:
        thread.start()
    media = subprocess.Popen([args.load, "--relay", f"http://127.0.0.1:{relay.http_port}", "--streams", "20",
                              "--profile", "voice", "--seconds", str(args.seconds), "--no-progress", "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = started + args.seconds
    while time.monotonic() < deadline:
        time.sleep(min(SAMPLE_EVERY, max(0.0, deadline - time.monotonic())))
        samples.append(relay.sample("load", started))
        print(f"soak: {samples[-1]}", file=sys.stderr, flush=True)
    stop_load.set()
    media_output, _ = media.communicate(timeout=120)
    for thread in threads[1:]:
        thread.join()
    samples.append(relay.sample("end of load", started))
    # Whatever is left expires by itself: sessions within 10 s, clients after --idle-timeout.
    settle = time.monotonic() + max(args.idle_timeout, 10) + 30
    while time.monotonic() < settle:
        stats = relay.stats()
        if stats["sessions"] == 0 and stats["forward_clients"] == 0 and stats["ports_in_use"] == 0:
            break
        time.sleep(1)
    time.sleep(2)
    samples.append(relay.sample("end (idle)", started))
    stop_upstream.set()
    threads[0].join()
    exit_status = relay.stop()

    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    with open(args.csv, "w", newline="") as output:
        writer = csv.DictWriter(output, fieldnames=list(samples[0].keys()))
        writer.writeheader()
        writer.writerows(samples)

    warm = next((s for s in samples if s["phase"] == "load" and s["t_s"] >= 60), samples[1])
    end_of_load, start, end = samples[-2], samples[0], samples[-1]
    print("| moment | t (s) | RSS (MiB) | open fds | ports in use | sessions | forward clients |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, sample in [("start, idle", start), ("after 1 min of load", warm),
                          ("end of load", end_of_load), ("end, idle", end)]:
        print(f"| {label} | {sample['t_s']:.0f} | {sample['rss_kib'] / 1024:.1f} | {sample['fds']} | "
              f"{sample['ports_in_use']} | {sample['sessions']} | {sample['forward_clients']} |")
    media_result = {}
    try:
        media_result = json.loads(media_output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pass
    print()
    print(f"Churn: {counts['created']} sessions created by the churner ({counts['created'] / args.seconds:.1f}/s), "
          f"{counts['deleted']} deleted, relay totals: {end['sessions_created']} created, "
          f"{end['sessions_deleted']} deleted, {end['sessions_expired']} expired; "
          f"{end['clients_created']} forward clients created, {end['clients_expired']} expired "
          f"({counts['client_echoes']} echoes, {counts['client_echo_timeouts']} clients without all echoes); "
          f"{counts['http_errors']} HTTP errors; other answers: "
          f"{ {k: v for k, v in counts.items() if k.startswith(('create_', 'delete_'))} or 'none'}.")
    if media_result:
        print(f"Media (mediarelay-load, 20 voice sessions): {media_result['sent']} sent, {media_result['received']} received, "
              f"{media_result['delivered']:.2%} delivered, ECN kept {media_result['ecn_kept']:.2%}, "
              f"DSCP kept {media_result['dscp_kept']:.2%}.")
    rss_growth = (end_of_load["rss_kib"] - warm["rss_kib"]) / warm["rss_kib"]
    checks = {
        "descriptors back to start": end["fds"] == start["fds"],
        "ports back to start": end["ports_in_use"] == start["ports_in_use"],
        f"RSS growth from minute 1 to end of load {rss_growth:+.1%} within {args.rss_tolerance:.0%}": rss_growth <= args.rss_tolerance,
        "relay exited 0 on SIGTERM": exit_status == 0,
    }
    print()
    for name, passed in checks.items():
        print(f"- {'PASS' if passed else 'FAIL'}: {name}")
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
