@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import STUN
import SystemSupport
import TestPorts
import TestSupport

/// coturn's real `turnserver` (Debian's coturn, installed by `make test-deps`) on loopback,
/// for the load generator's TURN mode to drive. Started with the flags of
/// ../shared/notes/turn-interop.md; stopped (SIGTERM to its own pid) in `stop` or deinit.
final class Coturn {
    let process = Process()
    /// coturn's database and pid file: its defaults under /var are not writable by every user.
    private let directory: URL
    let host: String
    let port: UInt16
    /// The TLS listener's port when started with certificates (`--tls-listening-port`).
    let tlsPort: UInt16?
    /// The relayed addresses' ports (--min-port ... --max-port).
    let relayPorts: ClosedRange<UInt16>
    var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    var tlsAddress: String? { tlsPort.map { host.contains(":") ? "[\(host)]:\($0)" : "\(host):\($0)" } }
    var pid: Int32 { process.processIdentifier }

    /// `relayPorts` relayed addresses at most (coturn refuses the next Allocate with 508).
    /// On `host` (127.0.0.1 or ::1), relaying from the same address. TURN over TCP is always
    /// on (on `port`); with `tls`, TURN over TLS too, on `tlsPort`, serving that certificate.
    init(auth: [String], relayPorts: Int, host: String = "127.0.0.1", tls: CertificateFixture? = nil) throws {
        self.host = host
        // Free for TCP too: turnserver listens on both, and a TCP port in use leaves it
        // retrying that bind forever without answering on UDP (FreePort).
        let free = try FreePort.udpAndTCP(host: host)
        port = free
        var tlsFlags = ["--no-tls"]
        if let tls {
            let tlsFree = try FreePort.udpAndTCP(host: host)
            guard tlsFree != free else { throw LoadError("no second port free on \(host)") }
            tlsFlags = ["--tls-listening-port", String(tlsFree), "--cert", tls.server.certificate, "--pkey", tls.server.key]
            tlsPort = tlsFree
        } else {
            tlsPort = nil
        }
        // Relayed ports from a random base below the kernel's ephemeral range (32768 and up),
        // where the generator's own sockets would compete with coturn for them.
        let base = UInt16.random(in: 10_000...19_000)
        self.relayPorts = base...(base + UInt16(relayPorts) - 1)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("turnload-coturn-\(getpid())-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/turnserver")
        process.arguments = [
            "-n",  // no /etc/turnserver.conf: only what is written here
            "--db", directory.appendingPathComponent("turndb").path,
            "--pidfile", directory.appendingPathComponent("turnserver.pid").path,
            "--listening-ip", host, "--relay-ip", host, "--listening-port", String(port),
            "--allow-loopback-peers", "--no-cli", "--no-dtls", "--no-tcp-relay",
            "--min-port", String(self.relayPorts.lowerBound), "--max-port", String(self.relayPorts.upperBound),
            "--log-file", "/dev/null", "--no-stdout-log", "--no-software-attribute",
        ] + tlsFlags + auth
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntilAnswering()
    }

    deinit { stop() }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Sends STUN Binding requests until one is answered (at most 10 s).
    private func waitUntilAnswering() throws {
        let socket = try TrafficSocket(bindTo: SocketAddress(host: host, port: 0), tos: 0)
        let server = try SocketAddress(host: host, port: port)
        let deadline = MonotonicClock.now() + 10_000_000_000
        var buffer = [UInt8](repeating: 0, count: 1024)
        while MonotonicClock.now() < deadline {
            guard process.isRunning else { throw LoadError("turnserver exited at start (status \(process.terminationStatus))") }
            let request = MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes
            _ = request.withUnsafeBytes { bytes in server.withSockaddr { sendto(socket.fd, bytes.baseAddress, bytes.count, 0, $0, $1) } }
            var p = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 100) > 0, recv(socket.fd, &buffer, buffer.count, 0) > 0 { return }
        }
        throw LoadError("turnserver on \(address) did not answer a Binding request within 10 s")
    }

    /// How many of coturn's own UDP sockets are bound to 127.0.0.1 on a relay port now (from
    /// /proc/net/udp, matched to the socket inodes of its descriptors: other programs' sockets
    /// may sit in the same ports).
    func boundRelayPorts() -> Int {
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
}
