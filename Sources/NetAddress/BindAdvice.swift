import Glibc

/// What to do about a bind or listen that failed: one table for every socket the relay opens
/// (UDP listeners and relayed ports, the control API), so the advice cannot drift apart.
public enum BindAdvice {
    /// The advice for `code`, or nil where there is nothing better to say than the error.
    /// `option` names the option that chose the port ("--http"), when there is one.
    public static func advice(_ code: Int32, option: String? = nil) -> String? {
        switch code {
        case EADDRINUSE:
            "another socket holds this port (another mediarelay?): stop it or choose another \(option.map { "\($0) " } ?? "")port"
        case EACCES, EPERM: "ports below 1024 need root or CAP_NET_BIND_SERVICE: choose a port of 1024 or more"
        case EADDRNOTAVAIL: "this address is not configured on any interface of this host: use one of its addresses, 127.0.0.1 or 0.0.0.0"
        case EAFNOSUPPORT: "this address family is disabled on this host (no IPv6?): use an IPv4 address"
        case EMFILE, ENFILE: "too many open files: raise the limit (ulimit -n, or LimitNOFILE= in the unit)"
        default: nil
        }
    }
}
