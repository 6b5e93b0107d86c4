import DatagramEngine
import Foundation
import Glibc
import NetAddress
@testable import RelayCore
import STUN
import TestPorts
import TLS
import XCTest

/// A relay (real workers on real loopback sockets, no executable) serving TURN over UDP and TCP,
/// and over TLS when given a certificate: what the stream tests drive from outside with
/// `StreamTurnClient`s and plain UDP peer sockets.
final class TurnStreamRelay {
    static let realm = "stream.test"
    let relay: Relay
    let udp: Endpoint
    let tcp: Endpoint
    let tls: Endpoint?
    let ports: PortBlock

    init(backend: Backend = .mmsg, workers: Int = 1, certificate: (cert: String, key: String)? = nil,
         configure: (inout TurnSettings) -> Void = { _ in }) throws {
        ports = try PortBlock(count: 100)
        udp = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint
        tcp = try Self.freeTCPPort()
        tls = certificate == nil ? nil : try Self.freeTCPPort()
        var settings = RelaySettings(ports: ports.range, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.workers = workers
        settings.engine = EngineConfiguration(backend: backend)
        var turn = TurnSettings(
            authenticator: TurnAuthenticator(credentials: TurnCredentials(realm: Self.realm, users: [("alice", "secret")])),
            peerPolicy: PeerPolicy(allowed: [AddressRange(parsing: "127.0.0.0/8")!]),
            relayIPv4: Endpoint(host: "127.0.0.1", port: 0)!)
        configure(&turn)
        TurnStreamLimits.configure(&settings.engine, maxConnections: turn.streamLimits.maxConnections)
        settings.turn = turn
        settings.turnListeners = [udp]
        settings.turnTCPListeners = [tcp]
        settings.turnTLSListeners = tls.map { [$0] } ?? []
        relay = Relay(settings: settings)
        if let certificate {
            relay.turnState.tlsContext = try TLSServerContext(certificateFile: certificate.cert, keyFile: certificate.key)
        }
        _ = try relay.start()
    }

    deinit { relay.stop() }

    /// A port free for TCP on 127.0.0.1 now (`FreePort`), as the relay's listener address.
    static func freeTCPPort() throws -> Endpoint {
        Endpoint(host: "127.0.0.1", port: try FreePort.tcp())!
    }

    /// The TURN figures of every worker together, as published (at most 100 ms old).
    var stats: TurnStats {
        var total = TurnStats()
        for worker in relay.stats() { total.merge(worker.turn) }
        return total
    }

    /// Waits until `condition` holds of the published figures (they lag up to 100 ms).
    func wait(seconds: Double = 5, until condition: (TurnStats) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(stats) { return true }
            usleep(20_000)
        }
        return condition(stats)
    }
}

/// A UDP socket standing in for a TURN peer: plain recv and send, nothing of the engine.
final class PlainUDPPeer {
    let descriptor: Int32
    let address: Endpoint

    init() throws {
        let socket = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!)
        address = socket.localEndpoint
        descriptor = dup(socket.descriptor)
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// Every datagram that arrives within `seconds` of quiet.
    func receiveAll(quietFor seconds: Double = 1) -> [[UInt8]] {
        var received: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 70_000)
        var quietSince = Date()
        while Date().timeIntervalSince(quietSince) < seconds {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count >= 0 {
                received.append(Array(buffer[0..<count]))
                quietSince = Date()
            }
        }
        return received
    }

    func send(_ bytes: [UInt8], to destination: Endpoint) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = destination.port.bigEndian
        address.sin_addr.s_addr = UInt32(truncatingIfNeeded: destination.low).bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}
