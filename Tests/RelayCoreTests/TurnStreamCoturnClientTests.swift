import DatagramEngine
import Foundation
@testable import RelayCore
import NetAddress
import STUN
import TestPorts
import TestSupport
import TLS
import XCTest

/// coturn's own client over TCP (`-t`) and TLS (`-t -S`) through the relay's workers to
/// turnutils_peer: channels, Send indications, client to client, a static user and the REST
/// secret, and 100 clients at once on each transport. Passes on uclient's totals
/// (TURNClientVerdict): every byte sent came back, none lost. The TLS listener serves a
/// certificate from a test CA made for the test (CertificateFixture).
final class TurnStreamCoturnClientTests: XCTestCase {
    func testCoturnClientOverTCPAndTLS() throws {
        try HostRequirement.requireTools(["/usr/bin/turnutils_uclient", "/usr/bin/turnutils_peer"])
        let certificates = try CertificateFixture()
        // One relayed port per allocation: uclient over TLS holds two per client (below).
        let ports = try PortBlock(count: 400)
        defer { withExtendedLifetime(ports) {} }
        let tcp = try TurnStreamRelay.freeTCPPort()
        let tls = try TurnStreamRelay.freeTCPPort()
        let peerPort = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint.port
        var settings = RelaySettings(ports: ports.range, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.workers = 2
        settings.ports = PortPool(range: ports.range, turnLimit: 390)
        settings.turn = TurnSettings(
            authenticator: TurnAuthenticator(credentials: TurnCredentials(realm: "north.gov", users: [("alice", "secret")],
                                                                          secrets: ["logen"])),
            peerPolicy: PeerPolicy(allowed: [AddressRange(parsing: "127.0.0.0/8")!]),
            relayIPv4: Endpoint(host: "127.0.0.1", port: 0)!)
        TurnStreamLimits.configure(&settings.engine, maxConnections: 1000)
        settings.turnTCPListeners = [tcp]
        settings.turnTLSListeners = [tls]
        let relay = Relay(settings: settings)
        relay.turnState.tlsContext = try TLSServerContext(certificateFile: certificates.server.certificate,
                                                                    keyFile: certificates.server.key)
        _ = try relay.start()
        defer { relay.stop() }
        let peer = Process()
        peer.executableURL = URL(fileURLWithPath: "/usr/bin/turnutils_peer")
        peer.arguments = ["-L", "127.0.0.1", "-p", String(peerPort)]
        peer.standardOutput = FileHandle.nullDevice
        peer.standardError = FileHandle.nullDevice
        try peer.run()
        defer { peer.terminate() }

        // Per transport, the small modes together, then 100 clients alone: uclient over TLS
        // opens two connections per client, each with its allocation, so 100 clients hold 200.
        var runs: [UclientRun] = []
        for (transport, port, flags) in [("TCP", tcp.port, ["-t"]), ("TLS", tls.port, ["-t", "-S"])] {
            let base = flags + ["-p", String(port), "-c"]
            let batches = [[
                ("\(transport): channels", base),
                ("\(transport): Send indications", base + ["-s"]),
                ("\(transport): client to client", base + ["-y"]),
                ("\(transport): REST secret", base + ["-W", "logen"]),
            ], [("\(transport): 100 clients", base + ["-m", "100"])]]
            for batch in batches {
                runs += try UclientRun.runAll(batch.map { name, flags in
                    (name, ["-u", "alice", "-w", "secret", "-e", "127.0.0.1", "-r", String(peerPort), "-n", "10", "-m", "4",
                            "-z", "5", "-l", "160"] + flags + ["127.0.0.1"])
                })
            }
        }
        for run in runs {
            XCTAssertEqual(run.status, 0, "\(run.name)\n\(run.output.suffix(600))")
            XCTAssertEqual(TURNClientVerdict.problems(in: run.output, arguments: run.arguments), [], "\(run.name)\n\(run.output.suffix(600))")
        }
        let stats = relay.stats().reduce(into: TurnStats()) { $0.merge($1.turn) }
        XCTAssertGreaterThan(stats.transports.handshakesCompleted, 100)
        XCTAssertGreaterThan(stats.transports.datagramsToPeers[TurnTransport.tls.rawValue], 1000)
        XCTAssertGreaterThan(stats.transports.datagramsToPeers[TurnTransport.tcp.rawValue], 1000)
    }
}
