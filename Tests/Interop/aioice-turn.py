"""A TURN client that is not ours: aioice (the ICE library under aiortc) allocates on the relay
over UDP, TCP or TLS, sends datagrams to an echo peer through a channel, and counts the echoes.

    aioice-turn.py HOST PORT udp|tcp|tls USER PASSWORD COUNT

Prints one JSON line: {"relayed": [host, port], "sent": N, "echoed": N}; exits 1 on an error.
"""
import asyncio
import json
import ssl
import sys

from aioice import turn


class Echo(asyncio.DatagramProtocol):
    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.transport.sendto(data, addr)


class Counter(asyncio.DatagramProtocol):
    def __init__(self):
        self.received = set()

    def datagram_received(self, data, addr):
        self.received.add(data)


async def main(host, port, transport, user, password, count):
    loop = asyncio.get_running_loop()
    echo, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
    peer = echo.get_extra_info("sockname")
    context = None
    if transport == "tls":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    relay, counter = await asyncio.wait_for(turn.create_turn_endpoint(
        Counter, server_addr=(host, port), username=user, password=password, ssl=context,
        transport="tcp" if transport in ("tcp", "tls") else "udp"), 10)
    messages = [b"aioice %d" % n for n in range(count)]
    for message in messages:
        relay.sendto(message, peer)
        await asyncio.sleep(0.005)
    for _ in range(200):
        if len(counter.received) == count:
            break
        await asyncio.sleep(0.01)
    print(json.dumps({"relayed": list(relay.get_extra_info("sockname")), "sent": count,
                      "echoed": len(counter.received & set(messages))}), flush=True)
    relay.close()
    await asyncio.sleep(0.2)
    echo.close()


if __name__ == "__main__":
    host, port, transport, user, password, count = sys.argv[1:7]
    try:
        asyncio.run(main(host, int(port), transport, user, password, int(count)))
    except Exception as error:
        print(f"aioice-turn: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
