import Glibc
import SystemSupport

/// Starting a TCP connection without blocking, for the HTTP client and the TURN clients'
/// connections alike: a non-blocking socket whose connect is under way (or already made, as
/// on loopback it may be), finished by the caller's poll loop.
package enum TCPConnect {
    /// A socket whose connect has started: `connected` when it is made already, otherwise
    /// the caller waits for POLLOUT and reads the outcome with `outcome(of:)`.
    package struct Started {
        package let fd: Int32
        package let connected: Bool
    }

    /// A call that failed before the connection was under way.
    package struct Failure: Error {
        /// "socket" or "connect".
        package let call: String
        package let code: Int32
    }

    /// Opens a non-blocking TCP socket toward `server` and starts connecting; the caller owns
    /// the descriptor it returns. With `noDelay`, small messages leave at once (TCP_NODELAY),
    /// as a media client's must.
    package static func start(to server: SocketAddress, noDelay: Bool = false) throws(Failure) -> Started {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let opened = SystemCall.outcome { Int(socket(Int32(server.family), type, 0)) }
        guard case .done(let socketNumber) = opened else { throw Failure(call: "socket", code: code(opened)) }
        let fd = Int32(socketNumber)
        if noDelay {
            var on: Int32 = 1
            SystemCall.ignoringFailure { Int(setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))) }
        }
        let connected = SystemCall.outcome { Int(server.withSockaddr { connect(fd, $0, $1) }) }
        if connected == .done(0) { return Started(fd: fd, connected: true) }
        guard connected == .failed(EINPROGRESS) else {
            SystemCall.close(fd)
            throw Failure(call: "connect", code: code(connected))
        }
        return Started(fd: fd, connected: false)
    }

    /// Once the socket polls writable: 0 when the connection is made, else its errno.
    package static func outcome(of fd: Int32) -> Int32 {
        var soError: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        SystemCall.ignoringFailure { Int(getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)) }
        return soError
    }

    private static func code(_ outcome: CallOutcome) -> Int32 {
        switch outcome {
        case .failed(let code): code
        case .wouldBlock: EAGAIN
        case .done: 0
        }
    }
}
