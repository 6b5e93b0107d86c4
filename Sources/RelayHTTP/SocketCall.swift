#if canImport(Glibc)
import Glibc
#endif
import SystemSupport

/// The outcome of a non-blocking read or write: "would block" and end of file are results the
/// loop acts on, not errors.
enum IOResult: Equatable {
    case processed(Int)
    case wouldBlock
    case endOfFile
}

/// The socket calls the HTTP server makes, each through SystemSupport's gate.
///
/// Contract: EINTR is retried by the gate so no caller has to; EAGAIN/EWOULDBLOCK come back as
/// `.wouldBlock`; every other failure throws a `SystemCallError` naming the call.
enum SocketCall {
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> IOResult {
        guard let n = try SystemCall.check("read", { Glibc.read(fd, buffer.baseAddress, buffer.count) }) else { return .wouldBlock }
        return n == 0 ? .endOfFile : .processed(n)
    }

    /// MSG_NOSIGNAL: a client that went away must give EPIPE, not kill the process with SIGPIPE.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) -> IOResult {
        guard let n = try SystemCall.check("send", { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }) else {
            return .wouldBlock
        }
        return .processed(n)
    }

    /// A new non-blocking connection, or nil when none is waiting. Errors that concern only the
    /// connection being accepted (it was reset before we took it) also give nil: the listener
    /// itself is fine.
    static func accept(_ fd: Int32) throws(SystemCallError) -> Int32? {
        // accept4 is a GNU extension the Glibc module does not export; set the flags after.
        switch SystemCall.outcome({ Int(Glibc.accept(fd, nil, nil)) }) {
        case .done(let client):
            makeNonBlocking(Int32(client))
            return Int32(client)
        case .wouldBlock, .failed(ECONNABORTED), .failed(EPROTO):
            return nil
        case .failed(let code):
            throw SystemCallError("accept4", errno: code)
        }
    }

    /// O_NONBLOCK so no call can stall the loop; FD_CLOEXEC so a child never inherits it.
    static func makeNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    static func poll(_ fds: inout [pollfd], timeoutMilliseconds: Int32) throws(SystemCallError) -> Int {
        try fds.withUnsafeMutableBufferPointer { buffer throws(SystemCallError) in
            try SystemCall.require("poll") { Int(Glibc.poll(buffer.baseAddress, nfds_t(buffer.count), timeoutMilliseconds)) }
        }
    }

    /// Ends our sending side so the client sees end of file after the response, while we can
    /// still read (and discard) what it sends; closing outright could reset the connection and
    /// destroy the response before the client reads it.
    static func shutdownWrite(_ fd: Int32) {
        SystemCall.ignoringFailure { Int(Glibc.shutdown(fd, Int32(SHUT_WR))) }
    }

    /// Closes with a reset instead of an orderly end: for a client that stopped reading, whose
    /// unsent data would otherwise keep the connection alive in the kernel.
    static func abort(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        SystemCall.ignoringFailure { Int(setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))) }
        SystemCall.close(fd)
    }

    /// close() is not retried on EINTR: on Linux the descriptor is released either way.
    static func close(_ fd: Int32) {
        SystemCall.close(fd)
    }
}
