#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call and the errno it left.
///
/// Contract: `description` names the call, the C errno name and its meaning, e.g.
/// "bind: address already in use (EADDRINUSE)", so logs stay searchable by either.
struct SystemCallError: Error, CustomStringConvertible {
    var call: String
    var errno: Int32

    var description: String { "\(call): \(SystemCallError.explain(errno))" }

    /// "address already in use (EADDRINUSE)": strerror in lower case plus the C name.
    static func explain(_ code: Int32) -> String {
        let text = String(cString: strerror(code)).lowercased()
        return "\(text) (\(name(code)))"
    }

    static func name(_ code: Int32) -> String {
        switch code {
        case EADDRINUSE: "EADDRINUSE"
        case EADDRNOTAVAIL: "EADDRNOTAVAIL"
        case EACCES: "EACCES"
        case EPERM: "EPERM"
        case EAFNOSUPPORT: "EAFNOSUPPORT"
        case EINVAL: "EINVAL"
        case EMFILE: "EMFILE"
        case ENFILE: "ENFILE"
        case ENOBUFS: "ENOBUFS"
        case ENOMEM: "ENOMEM"
        case ECONNRESET: "ECONNRESET"
        case ECONNABORTED: "ECONNABORTED"
        case EPIPE: "EPIPE"
        case EBADF: "EBADF"
        case ENOTCONN: "ENOTCONN"
        default: "errno \(code)"
        }
    }
}
