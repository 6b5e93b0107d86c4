import Foundation
import XCTest

@testable import mediarelay

/// A datagram socket the test owns, standing in for systemd's notify socket.
final class NotifyListener {
    let fd: Int32
    let name: String
    private let cleanupPath: String?

    /// `abstract` binds `@name` in the abstract namespace; otherwise a path in the temp directory.
    init(abstract: Bool) throws {
        let unique = "mediarelay-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        name = abstract ? "@\(unique)" : FileManager.default.temporaryDirectory.appendingPathComponent(unique).path
        cleanupPath = abstract ? nil : name
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
        // A bounded wait: a missing datagram fails the test instead of hanging it.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    deinit {
        close(fd)
        if let cleanupPath { unlink(cleanupPath) }
    }
}

final class SystemdNotifierTests: XCTestCase {
    func testMessagesArriveOnAPathSocket() throws {
        let listener = try NotifyListener(abstract: false)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.name])
        XCTAssertTrue(notifier.isEnabled)
        try notifier.ready()
        XCTAssertEqual(listener.receive(), "READY=1")
        try notifier.status("forwarding\non 2 workers")
        XCTAssertEqual(listener.receive(), "STATUS=forwarding on 2 workers")
        try notifier.watchdog()
        XCTAssertEqual(listener.receive(), "WATCHDOG=1")
        try notifier.stopping()
        XCTAssertEqual(listener.receive(), "STOPPING=1")
    }

    func testMessagesArriveOnAnAbstractSocket() throws {
        let listener = try NotifyListener(abstract: true)
        let notifier = SystemdNotifier(socketPath: listener.name)
        try notifier.notify("READY=1\nSTATUS=up")
        XCTAssertEqual(listener.receive(), "READY=1\nSTATUS=up")
        try notifier.stopping()
        XCTAssertEqual(listener.receive(), "STOPPING=1")
    }

    func testNothingHappensWithoutNotifySocket() throws {
        let notifier = SystemdNotifier(environment: [:])
        XCTAssertFalse(notifier.isEnabled)
        XCTAssertNil(notifier.socketPath)
        try notifier.ready()
        XCTAssertFalse(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]).isEnabled)
    }

    func testASocketThatIsGoneIsReported() {
        let path = "/nonexistent-dir-\(getpid())/notify"
        XCTAssertThrowsError(try SystemdNotifier(socketPath: path).ready()) { error in
            XCTAssertTrue("\(error)".contains(path), "\(error)")
            XCTAssertTrue("\(error)".contains("sendto"), "\(error)")
        }
        let long = "/" + String(repeating: "a", count: 200)
        XCTAssertThrowsError(try SystemdNotifier(socketPath: long).ready())
    }

    func testWatchdogIntervalIsHalfOfWatchdogUsec() {
        let pid = getpid()
        XCTAssertEqual(SystemdNotifier(environment: ["WATCHDOG_USEC": "20000000"]).watchdogInterval, .seconds(10))
        XCTAssertEqual(
            SystemdNotifier(environment: ["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "\(pid)"]).watchdogInterval,
            .milliseconds(1500)
        )
        XCTAssertNil(SystemdNotifier(environment: ["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "\(pid + 1)"]).watchdogInterval)
        XCTAssertNil(SystemdNotifier(environment: ["WATCHDOG_USEC": "0"]).watchdogInterval)
        XCTAssertNil(SystemdNotifier(environment: ["WATCHDOG_USEC": "soon"]).watchdogInterval)
        XCTAssertNil(SystemdNotifier(environment: [:]).watchdogInterval)
    }
}
