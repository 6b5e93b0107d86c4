import Glibc
import SystemSupport

/// Talks to systemd's notify socket without libsystemd (the sd_notify protocol is one datagram
/// of `KEY=VALUE` lines over AF_UNIX SOCK_DGRAM).
///
/// Built from `NOTIFY_SOCKET`: a filesystem path, or `@name` for an abstract socket. When the
/// variable is unset every call is a no-op, so the server can call it unconditionally. A value
/// type with no open descriptor: each message opens, sends and closes its own socket, so it may
/// be used from any thread.
struct SystemdNotifier: Sendable {
    /// The notify socket as given in `NOTIFY_SOCKET`, or nil when not run by systemd.
    let socketPath: String?
    /// How often to send `WATCHDOG=1`: half of `WATCHDOG_USEC`, as sd_watchdog_enabled advises;
    /// nil when no watchdog is asked for, or when `WATCHDOG_PID` names another process.
    let watchdogInterval: Duration?

    /// Why a message could not be delivered; `description` says to which socket.
    struct NotifyError: Error, CustomStringConvertible {
        let call: String
        let errno: Int32
        let socketPath: String
        var description: String {
            "systemd notify to \(socketPath): \(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        }
    }

    init(environment: [String: String], processID: pid_t = getpid()) {
        let path = environment["NOTIFY_SOCKET"]
        socketPath = (path?.isEmpty ?? true) ? nil : path
        watchdogInterval = SystemdNotifier.watchdogInterval(environment: environment, processID: processID)
    }

    init(socketPath: String?, watchdogInterval: Duration? = nil) {
        self.socketPath = socketPath
        self.watchdogInterval = watchdogInterval
    }

    var isEnabled: Bool { socketPath != nil }

    /// Sends `state` (for example `READY=1`, or several `KEY=VALUE` lines) as one datagram.
    func notify(_ state: String) throws(NotifyError) {
        guard let socketPath else { return }
        let opened = SystemCall.outcome { Int(socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)) }
        guard case .done(let socketNumber) = opened else { throw NotifyError(call: "socket", errno: Self.code(opened), socketPath: socketPath) }
        let fd = Int32(socketNumber)
        defer { SystemCall.close(fd) }

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let isAbstract = pathBytes.first == UInt8(ascii: "@")
        // An abstract name starts with a NUL byte and is not NUL-terminated; its length is exact.
        if isAbstract { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity || (isAbstract && pathBytes.count <= capacity) else {
            throw NotifyError(call: "sockaddr_un (path longer than \(capacity - 1) bytes)", errno: ENAMETOOLONG, socketPath: socketPath)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        let length = socklen_t(pathOffset + pathBytes.count + (isAbstract ? 0 : 1))

        let bytes = Array(state.utf8)
        let sent = SystemCall.outcome {
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
        if case .done = sent { return }
        throw NotifyError(call: "sendto", errno: Self.code(sent), socketPath: socketPath)
    }

    private static func code(_ outcome: CallOutcome) -> Int32 {
        if case .failed(let code) = outcome { return code }
        return EAGAIN
    }

    /// The service is started and forwarding (`Type=notify` waits for this).
    func ready() throws(NotifyError) { try notify("READY=1") }
    /// Drain has begun; systemd shows the unit as deactivating.
    func stopping() throws(NotifyError) { try notify("STOPPING=1") }
    /// Still alive; send every `watchdogInterval`.
    func watchdog() throws(NotifyError) { try notify("WATCHDOG=1") }
    /// Free-form status shown by `systemctl status`; newlines would start new keys, so they go.
    func status(_ text: String) throws(NotifyError) {
        try notify("STATUS=" + String(text.map { $0.isNewline ? " " : $0 }))
    }

    /// Half of `WATCHDOG_USEC`, if set, positive, and meant for `processID`.
    static func watchdogInterval(environment: [String: String], processID: pid_t) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0 else {
            return nil
        }
        if let pidText = environment["WATCHDOG_PID"] {
            guard let pid = pid_t(pidText), pid == processID else { return nil }
        }
        return .microseconds(Int64(clamping: microseconds / 2))
    }
}
