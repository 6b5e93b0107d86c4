import Foundation
import Glibc
import TestPorts

/// coturn's real `turnserver` (Debian's coturn, installed by `make test-deps`) on a loopback
/// address, relaying to loopback peers: the one coturn launcher of the tests, for the load
/// generator's TURN mode to drive and for the end-to-end tests to prove their harness against
/// the reference server. Started with `-n` (no /etc/turnserver.conf) and the flags below, up
/// once it answers a STUN Binding request, stopped (SIGTERM, then SIGKILL) in `stop` or deinit.
///
/// A missing turnserver is a skip, or a failure under `make test` (`HostRequirement`).
public final class CoturnServer {
    public static let tool = "/usr/bin/turnserver"

    /// How clients authenticate; coturn cannot mix static users and the REST secret in one process.
    public enum Credentials: Sendable {
        case user(name: String, password: String)
        case restSecret(String)

        var arguments: [String] {
            switch self {
            case .user(let name, let password): ["--lt-cred-mech", "--user", "\(name):\(password)"]
            case .restSecret(let secret): ["--use-auth-secret", "--static-auth-secret", secret]
            }
        }
    }

    public let host: String
    public let port: UInt16
    /// The TLS listener's port when started with certificates (`--tls-listening-port`).
    public let tlsPort: UInt16?
    /// The relayed addresses' ports (`--min-port` ... `--max-port`).
    public var relayPorts: ClosedRange<UInt16> { relayBlock.range }
    public let realm: String
    /// Its relay ports, claimed against every other test on the host while it runs.
    private let relayBlock: PortBlock
    private let child: ChildProcess
    /// coturn's database and pid file: its defaults under /var are not writable by every user.
    private let directory: URL

    /// `HOST:PORT` (`[HOST]:PORT` on IPv6) of its UDP and TCP listener.
    public var address: String { Self.join(host, port) }
    public var tlsAddress: String? { tlsPort.map { Self.join(host, $0) } }
    public var pid: Int32 { child.process.processIdentifier }
    /// Its log so far (for failure messages).
    public var log: String { child.text }

    /// - Parameters:
    ///   - host: 127.0.0.1 or ::1; it listens and relays there. TURN over TCP is always on (on
    ///     `port`); with `tls`, TURN over TLS too, on `tlsPort`, serving that certificate.
    ///   - relayPorts: the relayed ports, held while it runs; at most that many allocations
    ///     (coturn refuses the next with 508). Below the kernel's ephemeral range, where tests'
    ///     own sockets do not compete.
    ///   - extraArguments: more of turnserver's flags (a test's limits).
    public init(credentials: Credentials, realm: String = "example.org", relayPorts: PortBlock,
                host: String = "127.0.0.1", tls: CertificateFixture? = nil, extraArguments: [String] = []) throws {
        try HostRequirement.requireTools([Self.tool])
        self.host = host
        self.realm = realm
        relayBlock = relayPorts
        // Free for TCP too: turnserver listens on both, and a TCP port in use leaves it
        // retrying that bind forever without answering on UDP (FreePort says why).
        port = try Self.freePort(host: host, besides: nil)
        var tlsFlags = ["--no-tls"]
        if let tls {
            let tlsPort = try Self.freePort(host: host, besides: port)
            tlsFlags = ["--tls-listening-port", String(tlsPort), "--cert", tls.server.certificate, "--pkey", tls.server.key]
            self.tlsPort = tlsPort
        } else {
            tlsPort = nil
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediarelay-coturn-\(getpid())-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let arguments = [
            "-n",  // no /etc/turnserver.conf: only what is written here
            "--listening-ip", host, "--listening-port", String(port), "--relay-ip", host,
            "--allow-loopback-peers", "--no-cli", "--no-dtls", "--no-tcp-relay",
            "--min-port", String(relayPorts.range.lowerBound), "--max-port", String(relayPorts.range.upperBound),
            "--realm", realm, "--log-file", "stdout", "--simple-log", "--no-software-attribute",
            "--db", directory.appendingPathComponent("turndb").path,
            "--pidfile", directory.appendingPathComponent("turnserver.pid").path,
        ] + tlsFlags + credentials.arguments + extraArguments
        child = try ChildProcess(Self.tool, arguments)
        guard Self.answersBinding(host: host, port: port, seconds: 20) else {
            child.stop()
            try? FileManager.default.removeItem(at: directory)
            throw HostRequirement.Missing(description: "turnserver on \(address) did not answer a Binding request within 20 s: \(child.text.suffix(2000))")
        }
    }

    deinit { stop() }

    public func stop() {
        child.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// How many of coturn's own UDP sockets are bound to 127.0.0.1 on a relay port now (from
    /// /proc/net/udp, matched to the socket inodes of its descriptors: other programs' sockets
    /// may sit in the same ports).
    public func boundRelayPorts() -> Int {
        let fdDirectory = "/proc/\(pid)/fd"
        let inodes = Set(((try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? []).compactMap { name -> Substring? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fdDirectory)/\(name)"),
                  target.hasPrefix("socket:[") else { return nil }
            return Substring(target.dropFirst(8).dropLast())
        })
        // Read to the end: the file reports size 0 and runs to thousands of lines on a busy host.
        guard let handle = FileHandle(forReadingAtPath: "/proc/net/udp"),
              let data = try? handle.readToEnd() else { return -1 }
        try? handle.close()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ")
            guard fields.count > 9, inodes.contains(fields[9]) else { return false }
            let local = fields[1].split(separator: ":")
            guard local.count == 2, local[0] == "0100007F", let port = UInt16(local[1], radix: 16) else { return false }
            return relayPorts.contains(port)
        }.count
    }

    /// A STUN Binding request (RFC 8489: type 0x0001, length 0, magic cookie, transaction id):
    /// every TURN server answers it without credentials.
    public static let bindingRequest: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + Array(repeating: 0x5A, count: 12)

    private static func join(_ host: String, _ port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private static func freePort(host: String, besides other: UInt16?) throws -> UInt16 {
        for _ in 0..<20 {
            let port = try FreePort.udpAndTCP(host: host)
            if port != other { return port }
        }
        throw HostRequirement.Missing(description: "no second port free for UDP and TCP on \(host)")
    }

    /// Sends Binding requests from a fresh socket until one is answered: a started daemon is
    /// ready when it answers, not after a fixed sleep.
    private static func answersBinding(host: String, port: UInt16, seconds: Double) -> Bool {
        let ipv6 = host.contains(":")
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard let (address, length) = FreePort.socketAddress(host: host, port: port) else { return false }
        var storage = address
        var answer = [UInt8](repeating: 0, count: 1024)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            _ = bindingRequest.withUnsafeBytes { bytes in
                withUnsafePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, length) }
                }
            }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 200) > 0, recv(fd, &answer, answer.count, 0) > 0 { return true }
        }
        return false
    }
}
