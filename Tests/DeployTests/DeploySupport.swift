import Foundation
import RelayObservation
import TestSupport
import XCTest

/// The repository root, found from this file's path so tests work from any working directory.
let repoRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Every file under deploy/ whose name ends in one of `extensions`, sorted.
func deployFiles(withExtensions extensions: Set<String>) -> [URL] {
    let deploy = repoRoot.appendingPathComponent("deploy")
    let walker = FileManager.default.enumerator(at: deploy, includingPropertiesForKeys: nil)
    var found: [URL] = []
    while let url = walker?.nextObject() as? URL {
        if extensions.contains(url.pathExtension) { found.append(url) }
    }
    return found.sorted { $0.path < $1.path }
}

/// The built relay with `arguments`, through the shared launcher, not waited for: these tests
/// watch its notify socket, its log and its exit themselves. Killed when the value goes.
func startRelay(arguments: [String], environment: [String: String] = [:], file: StaticString = #filePath, line: UInt = #line) throws -> ServerProcess {
    guard let binary = BuiltProducts.relay else {
        XCTFail("no mediarelay executable beside \(CommandLine.arguments[0]); run `swift build` first", file: file, line: line)
        throw CocoaError(.fileNoSuchFile)
    }
    return try ServerProcess(path: binary.path, arguments: arguments, environment: environment, ready: .started)
}

/// A datagram socket standing in for systemd's NOTIFY_SOCKET.
final class NotifySocket {
    let path: String
    private let fd: Int32

    init() throws {
        // Short and in /tmp: sun_path holds 107 bytes, and temp directories can be long.
        path = "/tmp/mediarelay-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    }

    /// The next datagram, or nil when none arrives within `timeout`.
    func receive(timeout: TimeInterval) -> String? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count < 0 ? nil : String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Collects datagrams until one holds the line `state`; false when `deadline` passes or `alive` says stop.
    func waitFor(_ state: String, until deadline: Date, seen: inout [String], alive: () -> Bool) -> Bool {
        while Date() < deadline {
            if let message = receive(timeout: 0.2) {
                seen.append(message)
                if message.split(separator: "\n").contains(Substring(state)) { return true }
            } else if !alive() {
                return false
            }
        }
        return false
    }

    deinit {
        close(fd)
        unlink(path)
    }
}

/// GET through the shared HTTP client (RelayObservation's: no URLSession, which would pull in
/// libcurl). Returns the status code and body, or nil when the server does not answer within 5 s.
func httpGet(port: UInt16, path: String) -> (status: Int, body: String)? {
    guard let response = try? HTTPClient(url: "http://127.0.0.1:\(port)", timeoutMs: 5000).request("GET", path) else { return nil }
    return (response.status, response.text)
}

private func dechunk(_ text: String) -> String {
    var rest = Substring(text)
    var body = ""
    while let lineEnd = rest.range(of: "\r\n"), let size = Int(rest[..<lineEnd.lowerBound].split(separator: ";")[0], radix: 16), size > 0 {
        let start = lineEnd.upperBound
        let bytes = Array(rest[start...].utf8)
        guard bytes.count >= size else { break }
        body += String(decoding: bytes[0..<size], as: UTF8.self)
        rest = Substring(String(decoding: bytes[size...], as: UTF8.self)).dropFirst(2)
    }
    return body
}
