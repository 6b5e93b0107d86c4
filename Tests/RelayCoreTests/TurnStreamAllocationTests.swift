import DatagramEngine
import Foundation
import Glibc
import MallocCounter
@testable import RelayCore
import NetAddress
import STUN
import TestPorts
import TestSupport
import XCTest

/// TURN over TCP allocates nothing per message: ChannelData cut from a client's stream and
/// sent to a peer, and the peer's datagrams written back to the stream as padded ChannelData,
/// through a whole worker turning on this thread while every allocation is counted. (Over TLS
/// OpenSSL 3 itself allocates a few small structures per record, which no setting avoids:
/// see the TLS module's allocation test.)
final class TurnStreamAllocationTests: XCTestCase {
    func testTurnOverTCPThroughAWorkerAllocatesNothing() throws {
        for backend in [Backend.perPacket, .mmsg, .uring] {
            let fixture = try WorkerOnTCP(backend: backend)
            let peer = try PlainUDPPeer()
            // The worker turns while the client waits for its answers (one thread: io_uring's
            // SINGLE_ISSUER wants the engine used where it was made).
            let client = try StreamTurnClient(to: fixture.tcp)
            client.pump = { fixture.worker.turn(timeoutMilliseconds: 1) }
            let relayed = try client.allocate(channel: 0x4000, to: peer.address)
            let payload = [UInt8](repeating: 7, count: 160)
            let framed = paddedChannelData(0x4000, payload)
            var inbound = [UInt8](repeating: 0, count: 64 << 10)

            func exchange(rounds: Int) -> (toPeer: Int, toClient: Int) {
                var toPeer = 0
                var toClient = 0
                for _ in 0..<rounds {
                    for _ in 0..<8 {
                        _ = framed.withUnsafeBytes { send(client.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        peer.sendRaw(payload, to: relayed)
                    }
                    var spins = 0
                    while (toPeer < 8 || toClient < 8 * 164) && spins < 400 {
                        fixture.worker.turn(timeoutMilliseconds: 2)
                        while peer.receiveRaw(into: &inbound) > 0 { toPeer += 1 }
                        let read = recv(client.descriptor, &inbound, inbound.count, Int32(MSG_DONTWAIT))
                        if read > 0 { toClient += read }
                        spins += 1
                    }
                    toPeer -= 8
                    toClient -= 8 * 164
                }
                return (toPeer, toClient)
            }

            _ = exchange(rounds: 10)  // warm-up: lazily sized tables, generic metadata
            fixture.worker.housekeeping()
            fixture.worker.publish()
            malloc_counter_start()
            let left = exchange(rounds: 200)
            let allocations = malloc_counter_stop()
            XCTAssertEqual(left.toPeer, 0, "\(backend): every ChannelData reached the peer")
            XCTAssertEqual(left.toClient, 0, "\(backend): every datagram came back framed")
            XCTAssertEqual(allocations, 0, "\(backend): allocations while relaying 3,200 messages over TCP")
        }
    }
}

/// One relay worker with TURN over TCP, turned by the test on its own thread.
final class WorkerOnTCP {
    let worker: Worker
    let tcp: Endpoint
    let ports: PortBlock

    init(backend: Backend) throws {
        ports = try PortBlock()
        tcp = try TurnStreamRelay.freeTCPPort()
        var settings = RelaySettings(ports: ports.range, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.engine = EngineConfiguration(backend: backend)
        TurnStreamLimits.configure(&settings.engine, maxConnections: 16)
        settings.turn = TurnSettings(
            authenticator: TurnAuthenticator(credentials: TurnCredentials(realm: TurnStreamRelay.realm, users: [("alice", "secret")])),
            peerPolicy: PeerPolicy(allowed: [AddressRange(parsing: "127.0.0.0/8")!]),
            relayIPv4: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.turnTCPListeners = [tcp]
        worker = try Worker(shared: WorkerShared(index: 0), settings: settings, ruleShares: [])
    }

    deinit { worker.shutDown() }
}

extension PlainUDPPeer {
    /// A send that allocates nothing (the test counts allocations around it).
    func sendRaw(_ bytes: [UInt8], to destination: Endpoint) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = destination.port.bigEndian
        address.sin_addr.s_addr = UInt32(truncatingIfNeeded: destination.low).bigEndian
        withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { _ = sendto(descriptor, $0.baseAddress, $0.count, 0, socketAddress, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    /// One datagram into `buffer` without waiting; its length, or -1 when none is there.
    func receiveRaw(into buffer: inout [UInt8]) -> Int {
        recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
    }
}
