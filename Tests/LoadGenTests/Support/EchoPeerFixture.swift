@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import SystemSupport
import TestPorts
import TestSupport

/// coturn's `turnutils_peer` on loopback: it echoes every datagram back to its sender (with
/// TOS 0), so a TURN client's data comes back through the relay. Stopped in `stop` or deinit.
final class EchoPeerFixture {
    static let tool = "/usr/bin/turnutils_peer"
    let process = Process()
    let address: String

    init(host: String = "127.0.0.1") throws {
        try HostRequirement.requireTools([Self.tool])
        let port = try FreePort.udpAndTCP(host: host)
        address = "\(host):\(port)"
        process.executableURL = URL(fileURLWithPath: Self.tool)
        process.arguments = ["-L", host, "-p", String(port)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntilEchoing(to: SocketAddress(host: host, port: port))
    }

    deinit { stop() }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// Sends a probe until it comes back (at most 10 s): started is not yet listening.
    private func waitUntilEchoing(to peer: SocketAddress) throws {
        let socket = try TrafficSocket(bindTo: SocketAddress(host: peer.host, port: 0), tos: 0)
        let deadline = MonotonicClock.now() + 10_000_000_000
        var buffer = [UInt8](repeating: 0, count: 64)
        while MonotonicClock.now() < deadline {
            let probe: [UInt8] = [1, 2, 3, 4]
            _ = probe.withUnsafeBytes { bytes in peer.withSockaddr { sendto(socket.fd, bytes.baseAddress, bytes.count, 0, $0, $1) } }
            var ready = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 100) > 0, recv(socket.fd, &buffer, buffer.count, 0) > 0 { return }
        }
        throw LoadError("turnutils_peer on \(address) did not echo within 10 s")
    }
}
