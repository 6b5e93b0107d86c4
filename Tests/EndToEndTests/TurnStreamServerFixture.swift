import DatagramEngine
import Foundation
import Glibc
import NetAddress
import TestPorts
import TestSupport
import TLS
import XCTest

/// The real mediarelay as a TURN server over UDP, TCP and TLS on 127.0.0.1 (static user
/// alice:secret, loopback peers allowed), its certificate and key read from files in a
/// directory of the fixture's own, so a test can put another pair in their place and send
/// SIGHUP, as a certbot renewal does.
final class TurnStreamServerFixture {
    static let realm = "streams.test"

    let certificates: CertificateFixture
    let relay: RelayProcess
    let udpPort: UInt16
    let tcpPort: UInt16
    let tlsPort: UInt16
    /// The files named by --tls-cert and --tls-key.
    let certificatePath: String
    let keyPath: String
    private let directory: String

    /// Starts the relay with `certificates.server` in place and `arguments` added (limits).
    init(_ arguments: [String] = []) throws {
        certificates = try CertificateFixture()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediarelay-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        certificatePath = "\(directory)/fullchain.pem"
        keyPath = "\(directory)/privkey.pem"
        udpPort = try FreePort.udp()
        tcpPort = try FreePort.tcp()
        tlsPort = try FreePort.tcp()
        do {
            try Self.copy(certificate: certificates.server.certificate, key: certificates.server.key, to: certificatePath, keyPath)
            relay = try RelayProcess(ports: PortBlock(count: 50), Self.arguments(udp: udpPort, tcp: tcpPort, tls: tlsPort,
                                                                                   certificate: certificatePath, key: keyPath) + arguments)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    deinit {
        relay.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The command line of a relay with a TURN listener of each transport on 127.0.0.1.
    static func arguments(udp: UInt16, tcp: UInt16, tls: UInt16, certificate: String, key: String) -> [String] {
        ["--relay-address", "127.0.0.1", "--turn-realm", realm, "--turn-user", "alice:secret",
         "--turn-allowed-peer", "127.0.0.1/32", "--turn", "127.0.0.1:\(udp)", "--turn-tcp", "127.0.0.1:\(tcp)",
         "--turn-tls", "127.0.0.1:\(tls)", "--tls-cert", certificate, "--tls-key", key]
    }

    /// Puts copies of `certificate` and `key` where the relay reads them, each renamed over
    /// the old file so the relay never reads half of one.
    func install(certificate: String, key: String) throws {
        try Self.copy(certificate: certificate, key: key, to: certificatePath, keyPath)
    }

    private static func copy(certificate: String, key: String, to certificatePath: String, _ keyPath: String) throws {
        for (source, destination) in [(certificate, certificatePath), (key, keyPath)] {
            let contents = try Data(contentsOf: URL(fileURLWithPath: source))
            try contents.write(to: URL(fileURLWithPath: destination), options: .atomic)
        }
    }

    /// A client context that trusts the fixture's CA and offers ALPN stun.turn, as a browser does.
    func clientContext() throws -> TLSClientContext {
        try TLSClientContext(trusting: certificates.caCertificate, alpn: ["stun.turn"])
    }

    /// Sends SIGHUP and waits until the relay has logged one more line that holds `text`.
    func reload(expecting text: String) -> Bool {
        let before = relay.log.components(separatedBy: text).count
        kill(relay.process.processIdentifier, SIGHUP)
        return eventually { self.relay.log.components(separatedBy: text).count > before }
    }
}
