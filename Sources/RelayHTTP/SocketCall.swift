#if canImport(Glibc)
import Glibc
#endif

/// The outcome of a non-blocking read or write: "would block" and end of file are results the
/// loop acts on, not errors.
enum IOResult: Equatable {
    case processed(Int)
    case wouldBlock
    case endOfFile
}

/// The one way the server reaches the socket system calls it uses.
///
/// Contract: EINTR is retried here so no caller has to; EAGAIN/EWOULDBLOCK come back as
/// `.wouldBlock`; every other failure throws a `SystemCallError` naming the call.
enum SocketCall {
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> IOResult {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .processed(n) }
            if n == 0 { return .endOfFile }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: throw SystemCallError(call: "read", errno: code)
            }
        }
    }

    /// MSG_NOSIGNAL: a client that went away must give EPIPE, not kill the process with SIGPIPE.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) -> IOResult {
        while true {
            let n = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .processed(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: throw SystemCallError(call: "send", errno: code)
            }
        }
    }

    /// A new non-blocking connection, or nil when none is waiting. Errors that concern only the
    /// connection being accepted (it was reset before we took it) also give nil: the listener
    /// itself is fine.
    static func accept(_ fd: Int32) throws(SystemCallError) -> Int32? {
        while true {
            // accept4 is a GNU extension the Glibc module does not export; set the flags after.
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 {
                makeNonBlocking(client)
                return client
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ECONNABORTED, EPROTO: return nil
            case let code: throw SystemCallError(call: "accept4", errno: code)
            }
        }
    }

    /// O_NONBLOCK so no call can stall the loop; FD_CLOEXEC so a child never inherits it.
    static func makeNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    static func poll(_ fds: inout [pollfd], timeoutMilliseconds: Int32) throws(SystemCallError) -> Int {
        while true {
            let n = fds.withUnsafeMutableBufferPointer {
                Glibc.poll($0.baseAddress, nfds_t($0.count), timeoutMilliseconds)
            }
            if n >= 0 { return Int(n) }
            if errno == EINTR { continue }
            throw SystemCallError(call: "poll", errno: errno)
        }
    }

    /// Ends our sending side so the client sees end of file after the response, while we can
    /// still read (and discard) what it sends; closing outright could reset the connection and
    /// destroy the response before the client reads it.
    static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes with a reset instead of an orderly end: for a client that stopped reading, whose
    /// unsent data would otherwise keep the connection alive in the kernel.
    static func abort(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        _ = Glibc.close(fd)
    }

    /// close() is not retried on EINTR: on Linux the descriptor is released either way.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}
