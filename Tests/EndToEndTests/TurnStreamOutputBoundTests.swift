import ClientSockets
import Foundation
import Glibc
import NetAddress
import TLS
import TestSupport
import XCTest

/// Issue 32's output promises of TURN over TCP and TLS, through the real executable: what a
/// client that does not read can make the relay hold (its output in user space plus its socket's
/// Send-Q in the kernel) stays within the README's bound, and a burst of 200 datagrams of
/// 1,200 bytes (a video keyframe) reaches a client that reads, every datagram, on io_uring and
/// on mmsg.
final class TurnStreamOutputBoundTests: XCTestCase {
    /// The README's bound on what one connection's client that does not read holds: the
    /// relay's output ring (256 KiB for relayed datagrams and 16 KiB more for answers) and the
    /// kernel's send buffer (SO_SNDBUF of 64 KiB, which the kernel doubles).
    private static let documentedBoundBytes = 400 << 10
    private static let outputRingBytes = 272 << 10

    func testAClientThatDoesNotReadHoldsNoMoreThanTheDocumentedBound() throws {
        let server = try TurnStreamServerFixture()
        for tls in [false, true] {
            let transport = tls ? "TLS" : "TCP"
            let flooder = try IndependentPeer(host: "127.0.0.1")
            let stuck = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: tls ? server.tlsPort : server.tcpPort)!,
                                             tls: tls ? try server.clientContext() : nil, receiveBufferBytes: 4096)
            let relayed = try stuck.allocate(channel: 0x4000, to: Endpoint(host: "127.0.0.1", port: flooder.port)!)
            let destination = try SocketAddress(host: relayed.hostText, port: relayed.port)
            let clientPort = stuck.local.port
            let serverPort = tls ? server.tlsPort : server.tcpPort
            let sendQueue = { () -> Int in
                (try? KernelTCPQueues(port: serverPort))?.serverSide.first { $0.remotePort == clientPort }?.sendQueue ?? -1
            }
            // 4 MB: more than the kernel's largest send buffer (tcp_wmem) would take unbounded.
            for index in 0..<4_000 {
                try flooder.send([UInt8](repeating: 0xAB, count: 1_000), tos: 0, to: destination)
                if index % 200 == 199 { usleep(2_000) }
            }
            // The Send-Q once it has stopped growing.
            var largest = sendQueue()
            var steady = 0
            while steady < 5 {
                usleep(200_000)
                let now = sendQueue()
                steady = now > largest ? 0 : steady + 1
                largest = max(largest, now)
            }
            let stats = try server.relay.stats()
            let dropped = RelayProcess.number(stats, "turn", "drops", "client_backpressure") ?? 0
            print("TurnStreamOutputBoundTests \(transport): a client that does not read: relay's Send-Q \(largest) bytes "
                  + "+ output ring \(Self.outputRingBytes) = \(largest + Self.outputRingBytes) (bound \(Self.documentedBoundBytes)); "
                  + "dropped so far \(dropped)")
            XCTAssertGreaterThan(largest, 0, "\(transport): no Send-Q seen for the client's connection")
            XCTAssertLessThanOrEqual(largest + Self.outputRingBytes, Self.documentedBoundBytes,
                                     "\(transport): Send-Q \(largest) bytes plus the output ring is past the README's bound")
            XCTAssertGreaterThan(dropped, 0, "\(transport): nothing dropped for a client that does not read: \(stats)")
        }
        XCTAssertEqual(server.relay.stop(), 0, server.relay.log)
    }

    func testBurstsOfAKeyframeReachAClientThatReadsOverTCPAndTLSOnUringAndMmsg() throws {
        for engine in ["uring", "mmsg"] {
            let server = try TurnStreamServerFixture(["--engine", engine])
            for tls in [false, true] {
                let what = "\(tls ? "TLS" : "TCP") on \(engine)"
                let peer = try IndependentPeer(host: "127.0.0.1")
                let client = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: tls ? server.tlsPort : server.tcpPort)!,
                                                  tls: tls ? try server.clientContext() : nil)
                let relayed = try client.allocate(channel: 0x4000, to: Endpoint(host: "127.0.0.1", port: peer.port)!)
                let destination = try SocketAddress(host: relayed.hostText, port: relayed.port)
                var delivered = 0
                for burst in 0..<Self.bursts {
                    for index in 0..<Self.burstDatagrams {
                        var payload = [UInt8](repeating: 0xCD, count: Self.datagramBytes)
                        withUnsafeBytes(of: UInt32(burst * Self.burstDatagrams + index).bigEndian) { payload.replaceSubrange(0..<4, with: $0) }
                        try peer.send(payload, tos: 0, to: destination)
                    }
                    // Each datagram of the burst once, in order; a burst with a gap ends at
                    // the read that waits in vain.
                    let first = burst * Self.burstDatagrams
                    var received = 0
                    while received < Self.burstDatagrams, let message = client.readMessage(seconds: 2) {
                        XCTAssertEqual(message.count, 4 + Self.datagramBytes, what)
                        let sequence = message[4..<8].reduce(0) { $0 << 8 | Int($1) }
                        XCTAssertGreaterThanOrEqual(sequence, first + received, "\(what): out of order")
                        if sequence >= first && sequence < first + Self.burstDatagrams { received += 1 }
                    }
                    delivered += received
                }
                let stats = try server.relay.stats()
                print("TurnStreamOutputBoundTests \(what): \(delivered) of \(Self.bursts * Self.burstDatagrams) delivered in bursts of "
                      + "\(Self.burstDatagrams) x \(Self.datagramBytes) B; client_backpressure "
                      + "\(RelayProcess.number(stats, "turn", "drops", "client_backpressure") ?? 0)")
                XCTAssertEqual(delivered, Self.bursts * Self.burstDatagrams, "\(what): \(stats)")
            }
            XCTAssertEqual(server.relay.stop(), 0, server.relay.log)
        }
    }

    /// 100 clients over TCP without an allocation pipeline 20,000 Bindings each and never
    /// read. Each is read until 32 KiB of answers wait in the relay (and the kernel's buffers
    /// between them are full), so the relay holds little more than their inputs (66 KiB each),
    /// not the output an allocated client's media may fill.
    func testClientsThatPipelineWithoutReadingBeforeAnAllocationCostLittleMoreThanTheirInput() throws {
        raiseOpenFileLimit()
        let server = try TurnStreamServerFixture(["--turn-max-connections-per-source", "1000"])
        let pid = server.relay.process.processIdentifier
        let clients = 100
        let before = try ProcessFootprint(pid: pid)
        let pipeliners = try StalledConnectionsFixture(count: clients, port: server.tcpPort, receiveBufferBytes: 4096)
        let requests = TurnStreamPipelinedRequestsTests.bindings(20_000).bytes
        let sent = try pipeliners.sendUntilStalled(requests, quietSeconds: 0.5)
        // What the relay has not read waits in the kernel; once that stops shrinking, every
        // client's output is as full as the relay lets it be.
        var waiting = try KernelTCPQueues(port: server.tcpPort).bytesInFlightToServer
        var still = 0
        while still < 3 {
            usleep(200_000)
            let now = try KernelTCPQueues(port: server.tcpPort).bytesInFlightToServer
            still = now < waiting ? 0 : still + 1
            waiting = now
        }
        let stats = try server.relay.stats()
        let after = try ProcessFootprint(pid: pid)
        let perClient = (after.residentKilobytes - before.residentKilobytes) / clients
        let read = (sent - waiting) / clients
        print("TurnStreamOutputBoundTests: \(clients) clients pipelining without reading: the relay read \(read) bytes of each "
              + "(\(read / 20) Bindings) and stopped; relay \(before) before, \(after) after: \(perClient) KiB a client")
        XCTAssertEqual(RelayProcess.number(stats, "turn", "transports", "tcp", "connections"), clients, "\(stats)")
        XCTAssertEqual(RelayProcess.number(stats, "turn", "drops", "client_backpressure"), 0, "answers dropped")
        XCTAssertGreaterThan(waiting, 0, "the relay read every request: their answers filled nothing")
        XCTAssertLessThan(perClient, 66 + 32 + 64, "a client that does not read its answers holds more than its input and 32 KiB")
        pipeliners.closeAll()
        XCTAssertEqual(server.relay.stop(), 0, server.relay.log)
    }

    /// A client that first sends media fast (so the kernel's autotuning would let the relay's
    /// receive buffer grow to megabytes), then pipelines requests without reading their answers:
    /// the relay stops reading it, and what the client sends meanwhile waits in a receive
    /// buffer of the README's size (SO_RCVBUF of 128 KiB, which the kernel doubles).
    func testWhatAClientSendsWhileTheRelayStopsReadingItWaitsInABoundedBuffer() throws {
        let server = try TurnStreamServerFixture()
        let peer = try IndependentPeer(host: "127.0.0.1")
        let client = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: server.tcpPort)!, receiveBufferBytes: 4096)
        _ = try client.allocate(channel: 0x4000, to: Endpoint(host: "127.0.0.1", port: peer.port)!)
        let media = [UInt8](repeating: 0x5A, count: 1_200)
        var burst: [UInt8] = []
        for _ in 0..<1_000 { burst += [0x40, 0x00, UInt8(media.count >> 8), UInt8(media.count & 0xFF)] + media }
        for _ in 0..<20 { try client.writeAtOnce(burst) }
        let requests = TurnStreamPipelinedRequestsTests.bindings(100_000).bytes
        _ = try client.writeInBackground(requests)
        let clientPort = client.local.port
        var largest = 0
        var steady = 0
        while steady < 5 {
            usleep(200_000)
            let now = try KernelTCPQueues(port: server.tcpPort).serverSide.first { $0.remotePort == clientPort }?.receiveQueue ?? 0
            steady = now > largest ? 0 : steady + 1
            largest = max(largest, now)
        }
        print("TurnStreamOutputBoundTests: a client the relay stopped reading: \(largest) bytes wait in the relay's receive queue")
        XCTAssertLessThanOrEqual(largest, Self.receiveBufferBoundBytes, "the relay's receive queue for one client")
        // The writer's next send fails, and its thread ends.
        shutdown(client.descriptor, Int32(SHUT_RDWR))
        XCTAssertEqual(server.relay.stop(), 0, server.relay.log)
    }

    private static let receiveBufferBoundBytes = 256 << 10
    private static let bursts = 5
    private static let burstDatagrams = 200
    private static let datagramBytes = 1_200
}
