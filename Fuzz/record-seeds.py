#!/usr/bin/env python3
"""Records real TURN traffic as fuzz seeds (Fuzz/README.md): coturn's turnutils_uclient talks to
the relay through this script, over UDP and over TCP; each datagram either way becomes a seed of
FuzzSTUN (and of FuzzTurnRequests, framed as its raw-datagram step), and each TCP direction's
whole byte stream a seed of FuzzStreamFraming. Run from the repository root after `swift build`:
    python3 Fuzz/record-seeds.py
"""
import hashlib, os, select, socket, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "Corpus")


def free_port(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def save(target, data, prefix=b""):
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    data = prefix + data
    with open(os.path.join(directory, "uclient-" + hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


def turn_step(datagram):
    # FuzzTurnRequests' raw step: kind 0, client 0, a length byte, then the bytes.
    return bytes([0, 0, min(len(datagram), 255)]) + datagram[:255] if len(datagram) else b""


def main():
    relay = os.path.join(ROOT, ".build", "debug", "mediarelay")
    udp, tcp, http, peer = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM), free_port(socket.SOCK_STREAM), free_port(socket.SOCK_DGRAM)
    server = subprocess.Popen([relay, "--relay-address", "127.0.0.1", "--turn", f"127.0.0.1:{udp}", "--turn-tcp", f"127.0.0.1:{tcp}",
                               "--turn-realm", "fuzz.test", "--turn-user", "alice:secret", "--turn-allowed-peer", "127.0.0.1/32",
                               "--http", f"127.0.0.1:{http}", "--ports", "47000-47099"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peer_tool = subprocess.Popen(["turnutils_peer", "-L", "127.0.0.1", "-p", str(peer)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    try:
        record_udp(udp, peer, ["-c"])
        record_udp(udp, peer, [])
        record_tcp(tcp, peer)
    finally:
        peer_tool.terminate()
        server.terminate()


def record_udp(relay_port, peer, mode):
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(("127.0.0.1", 0))
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.bind(("127.0.0.1", 0))
    client = subprocess.Popen(["turnutils_uclient", "-u", "alice", "-w", "secret", "-m", "1", "-n", "3", "-l", "120"] + mode +
                              ["-p", str(front.getsockname()[1]), "-e", "127.0.0.1", "-r", str(peer), "127.0.0.1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client_address = None
    deadline = time.time() + 15
    while client.poll() is None and time.time() < deadline:
        ready, _, _ = select.select([front, back], [], [], 0.2)
        for s in ready:
            data, source = s.recvfrom(65535)
            if s is front:
                client_address = source
                back.sendto(data, ("127.0.0.1", relay_port))
            elif client_address:
                front.sendto(data, client_address)
            if data[0] < 0x40:
                save("FuzzSTUN", data, b"\x00")
            save("FuzzTurnRequests", turn_step(data))
    client.kill()


def record_tcp(relay_port, peer):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    client = subprocess.Popen(["turnutils_uclient", "-t", "-u", "alice", "-w", "secret", "-m", "1", "-n", "3", "-l", "120",
                               "-p", str(listener.getsockname()[1]), "-e", "127.0.0.1", "-r", str(peer), "127.0.0.1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    streams = {}
    pairs = []
    deadline = time.time() + 15
    while client.poll() is None and time.time() < deadline:
        ready, _, _ = select.select([listener] + [s for pair in pairs for s in pair], [], [], 0.2)
        for s in ready:
            if s is listener:
                accepted, _ = listener.accept()
                upstream = socket.create_connection(("127.0.0.1", relay_port))
                pairs.append((accepted, upstream))
                continue
            other = next(b if a is s else a for a, b in pairs if s in (a, b))
            data = s.recv(65535)
            if not data:
                continue
            other.sendall(data)
            streams[s] = streams.get(s, b"") + data
    client.kill()
    for data in streams.values():
        # FuzzStreamFraming: a maximum byte (255: the largest), no cuts, then the stream.
        save("FuzzStreamFraming", b"\xff\x00" + data[:4096])


if __name__ == "__main__":
    sys.exit(main())
