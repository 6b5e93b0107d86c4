import Glibc

/// The C names of the errno values a network server meets, for messages and metric labels.
public enum ErrnoName {
    public static func of(_ value: Int32) -> String {
        switch value {
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case EINTR: "EINTR"
        case EIO: "EIO"
        case EBADF: "EBADF"
        case EAGAIN: "EAGAIN"
        case ENOMEM: "ENOMEM"
        case EACCES: "EACCES"
        case EFAULT: "EFAULT"
        case EBUSY: "EBUSY"
        case EINVAL: "EINVAL"
        case ENFILE: "ENFILE"
        case EMFILE: "EMFILE"
        case ENOSPC: "ENOSPC"
        case EPIPE: "EPIPE"
        case ENOSYS: "ENOSYS"
        case ENOTSOCK: "ENOTSOCK"
        case EDESTADDRREQ: "EDESTADDRREQ"
        case EMSGSIZE: "EMSGSIZE"
        case ENOPROTOOPT: "ENOPROTOOPT"
        case EOPNOTSUPP: "EOPNOTSUPP"
        case EAFNOSUPPORT: "EAFNOSUPPORT"
        case EADDRINUSE: "EADDRINUSE"
        case EADDRNOTAVAIL: "EADDRNOTAVAIL"
        case ENETDOWN: "ENETDOWN"
        case ENETUNREACH: "ENETUNREACH"
        case ECONNABORTED: "ECONNABORTED"
        case ECONNRESET: "ECONNRESET"
        case ENOBUFS: "ENOBUFS"
        case ENOTCONN: "ENOTCONN"
        case ETIMEDOUT: "ETIMEDOUT"
        case ECONNREFUSED: "ECONNREFUSED"
        case EHOSTUNREACH: "EHOSTUNREACH"
        case ETIME: "ETIME"
        case ECANCELED: "ECANCELED"
        default: "errno \(value)"
        }
    }
}
