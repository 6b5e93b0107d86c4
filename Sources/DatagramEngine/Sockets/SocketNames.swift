import Glibc
import NetAddress
import SystemSupport

/// A socket's own and its peer's address, asked of the kernel (bind, getsockname,
/// getpeername): one place for the sockaddr round trips of UDP and TCP sockets alike.
enum SocketNames {
    /// Binds and reads back the address the kernel chose (the port, for port 0). `what` names
    /// the protocol in the error ("cannot bind TCP [::]:3478: ...").
    static func bind(_ fd: Int32, to endpoint: Endpoint, family: Int32, what: String) throws(SystemCallError) -> Endpoint {
        var storage = sockaddr_storage()
        let length = endpoint.write(to: &storage, family: family)
        _ = try SystemCall.require("cannot bind \(what)", address: endpoint.description, advice: { BindAdvice.advice($0) }) {
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Int(Glibc.bind(fd, $0, length)) }
            }
        }
        guard let local = local(of: fd) else {
            throw SystemCallError("getsockname", errno: EAFNOSUPPORT, address: endpoint)
        }
        return local
    }

    /// The address `fd` is bound to; nil when the kernel cannot say (not an IP socket).
    static func local(of fd: Int32) -> Endpoint? { name(of: fd) { getsockname(fd, $0, $1) } }

    /// The address of `fd`'s peer; nil when it has none (not connected any more).
    static func peer(of fd: Int32) -> Endpoint? { name(of: fd) { getpeername(fd, $0, $1) } }

    private static func name(of fd: Int32, _ call: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> Endpoint? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let outcome = SystemCall.ownOutcome("getsockname/getpeername") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Int(call($0, &length)) }
            }
        }
        guard case .done = outcome else { return nil }
        return Endpoint(reading: &storage, length: length)
    }
}
