import DatagramEngine
import Foundation
@testable import RelayCore
import NetAddress
import TestPorts
import TestSupport
import XCTest

/// coturn's own test client against the relay's TURN workers (a Relay with two workers, no
/// executable): turnutils_uclient through mediarelay to turnutils_peer, which echoes. Passes
/// when uclient sent every byte its arguments asked for, all came back, none was lost and no
/// line says error (TURNClientVerdict, shared with the end-to-end tests). Covers channels, Send
/// indications, client to client, IPv6 relays, REST credentials and dual allocations; each of
/// these found a difference from coturn that a hand-written client did not.
final class TurnCoturnClientTests: XCTestCase {
    func testCoturnClientModes() throws {
        try HostRequirement.requireTools(["/usr/bin/turnutils_uclient", "/usr/bin/turnutils_peer"])
        let listener = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint
        let peerPort = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint.port
        let ports = try PortBlock(count: 200)
        defer { withExtendedLifetime(ports) {} }
        var settings = RelaySettings(ports: ports.range, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.workers = 2
        settings.turn = TurnSettings(
            authenticator: TurnAuthenticator(credentials: TurnCredentials(realm: "north.gov", users: [("alice", "secret")],
                                                                          secrets: ["logen"])),
            peerPolicy: PeerPolicy(allowed: [AddressRange(parsing: "127.0.0.0/8")!, AddressRange(parsing: "::1/128")!]),
            relayIPv4: Endpoint(host: "127.0.0.1", port: 0)!, relayIPv6: Endpoint(host: "::1", port: 0)!)
        settings.turnListeners = [listener]
        let relay = Relay(settings: settings)
        _ = try relay.start()
        defer { relay.stop() }
        let peer = Process()
        peer.executableURL = URL(fileURLWithPath: "/usr/bin/turnutils_peer")
        peer.arguments = ["-L", "127.0.0.1", "-L", "::1", "-p", String(peerPort)]
        peer.standardOutput = FileHandle.nullDevice
        peer.standardError = FileHandle.nullDevice
        try peer.run()
        defer { peer.terminate() }

        let modes: [(String, [String])] = [
            ("channels, RTP/RTCP pairs", []),
            ("Send indications", ["-s"]),
            ("client to client", ["-y"]),
            ("client to client by indications", ["-y", "-s"]),
            ("IPv6 relay", ["-x", "-e", "::1"]),
            ("REST secret", ["-W", "logen"]),
            ("dual allocation", ["-Z", "-e", "::1"]),
            ("DONT-FRAGMENT, 10 clients", ["-g", "-m", "10"]),
        ]
        let runs = try UclientRun.runAll(modes.map { name, flags in
            (name, ["-u", "alice", "-w", "secret", "-p", String(listener.port), "-e", "127.0.0.1",
                    "-r", String(peerPort), "-n", "10", "-m", "2", "-z", "5", "-l", "160"] + flags + ["127.0.0.1"])
        })
        for run in runs {
            // 255 when it gave up (a refused Allocate), SIGTERM's 15 when stopped at the deadline.
            XCTAssertEqual(run.status, 0, "\(run.name)\n\(run.output.suffix(600))")
            XCTAssertEqual(TURNClientVerdict.problems(in: run.output, arguments: run.arguments), [], "\(run.name)\n\(run.output.suffix(600))")
        }
    }
}
