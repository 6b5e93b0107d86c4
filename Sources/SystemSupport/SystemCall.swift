import Glibc

/// What one system call did, as the packet path needs it: nothing here allocates.
public enum CallOutcome: Equatable, Sendable {
    /// The call succeeded with this (non-negative) result.
    case done(Int)
    /// EAGAIN / EWOULDBLOCK: nothing can be done now. A result, not an error.
    case wouldBlock
    /// The call failed with this errno (never EINTR: that is retried).
    case failed(Int32)
}

/// The one way into the kernel. Every module reaches its system calls through here, so the
/// rules live in one place:
/// - EINTR is retried here, and nowhere else;
/// - EAGAIN / EWOULDBLOCK come back as `.wouldBlock`, a result the caller acts on;
/// - every other failure is the errno (`outcome`, for the packet path, where failures are
///   counted) or a `SystemCallError` naming the call, the errno's C name and the address
///   (`check`, `require`, for everything else).
///
/// The calls are passed as non-escaping closures and inlined, so a call through the gate costs
/// what the bare call costs.
public enum SystemCall {
    /// Runs `call`, a C call that returns -1 and sets errno when it fails.
    @inlinable @inline(__always)
    public static func outcome(_ call: () -> Int) -> CallOutcome {
        while true {
            let result = call()
            if result >= 0 { return .done(result) }
            let code = errno
            if code == EINTR { continue }
            return code == EAGAIN || code == EWOULDBLOCK ? .wouldBlock : .failed(code)
        }
    }

    /// `outcome` for a caller's calls on descriptors and memory it owns itself (the datagram
    /// engine's): EBADF or EFAULT there can only be a bug (a descriptor used after its close, a
    /// pointer computed wrong), and going on would read or write another socket or memory, so
    /// the process stops with the call's name, as swift-nio does. A caller whose descriptors
    /// come from elsewhere (the load generator) uses `outcome` and keeps them as results.
    @inlinable @inline(__always)
    public static func ownOutcome(_ name: StaticString, _ call: () -> Int) -> CallOutcome {
        let result = outcome(call)
        if case .failed(let code) = result, code == EBADF || code == EFAULT { bug(name, errno: code) }
        return result
    }

    /// Stops the process for a call that failed in a way only a bug in this program explains.
    /// Out of line: it is never on a path that runs.
    @inline(never)
    public static func bug(_ name: StaticString, errno code: Int32) -> Never {
        fatalError("\(name) failed: \(SystemCallError.explain(code)); a descriptor used after close or a bad pointer, a bug in mediarelay")
    }

    /// Runs a non-blocking call: its result, `nil` for "would block", or an error that says
    /// what was being done (`operation`) and to which address.
    @inlinable
    public static func check(_ operation: @autoclosure () -> String, address: @autoclosure () -> String? = nil,
                             _ call: () -> Int) throws(SystemCallError) -> Int? {
        switch outcome(call) {
        case .done(let result): return result
        case .wouldBlock: return nil
        case .failed(let code): throw SystemCallError(operation(), errno: code, address: address())
        }
    }

    /// Runs a call that must succeed (set-up: socket, bind, setsockopt...): EAGAIN is an error
    /// here too.
    @inlinable
    public static func require(_ operation: @autoclosure () -> String, address: @autoclosure () -> String? = nil,
                               advice: (Int32) -> String? = { _ in nil }, _ call: () -> Int) throws(SystemCallError) -> Int {
        switch outcome(call) {
        case .done(let result): return result
        case .wouldBlock: throw SystemCallError(operation(), errno: EAGAIN, address: address(), advice: advice(EAGAIN))
        case .failed(let code): throw SystemCallError(operation(), errno: code, address: address(), advice: advice(code))
        }
    }

    /// For calls whose failure changes nothing for the caller (close, a best-effort option):
    /// EINTR retried like everywhere else, the outcome dropped on purpose.
    @inlinable @inline(__always)
    public static func ignoringFailure(_ call: () -> Int) {
        _ = outcome(call)
    }

    /// close(2) is never retried: on Linux the descriptor is released even when it fails with EINTR.
    @inlinable
    public static func close(_ descriptor: Int32) {
        _ = Glibc.close(descriptor)
    }
}
