import Foundation
import TestSupport
import XCTest
import JSONSyntax

/// A TURN client that is not ours and not coturn's: aioice (the ICE library under aiortc, from
/// PyPI, installed by `make test-deps` into .build/test-tools) allocates on the real relay over
/// UDP, TCP and TLS, binds a channel to an echo peer and gets back every datagram it sent
/// (Tests/Interop/aioice-turn.py). About 1 s a transport.
final class AioiceTurnTests: XCTestCase {
    func testAioiceRelaysOverUDPTCPAndTLS() throws {
        let python = Self.repositoryRoot.appendingPathComponent(".build/test-tools/bin/python").path
        try TestTools.require([python])
        let script = Self.repositoryRoot.appendingPathComponent("Tests/Interop/aioice-turn.py").path
        let server = try TurnStreamServerFixture()
        for (transport, port) in [("udp", server.udpPort), ("tcp", server.tcpPort), ("tls", server.tlsPort)] {
            let (status, output) = try ChildProcess.run(python, [script, "127.0.0.1", "\(port)", transport, "alice", "secret", "50"],
                                                        seconds: 30)
            XCTAssertEqual(status, 0, "\(transport): \(output)")
            let line = output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init) ?? ""
            let verdict = try? JSONValue(parsing: Array(line.utf8))
            XCTAssertEqual(verdict?["echoed"]?.integer, 50, "\(transport): \(output)")
            XCTAssertEqual(verdict?["relayed"]?.elements?.first?.string, "127.0.0.1", "\(transport): \(output)")
        }
        let turn = try XCTUnwrap(server.relay.stats()["turn"] as? [String: Any])
        let transports = try XCTUnwrap(turn["transports"] as? [String: Any])
        for name in ["udp", "tcp", "tls"] {
            XCTAssertEqual((transports[name] as? [String: Any])?["allocations_created"] as? Int, 1, name)
        }
    }

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}
