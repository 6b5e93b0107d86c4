import Glibc

/// A failed system call: which operation, the errno by its C name, and the address involved
/// where there is one. EAGAIN never becomes one of these: it is a result ("nothing now").
public struct SystemCallError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var errno: Int32
    public var address: Endpoint?
    /// What a user can do about it, when there is something to say.
    public var advice: String?

    public init(_ operation: String, errno: Int32, address: Endpoint? = nil, advice: String? = nil) {
        self.operation = operation
        self.errno = errno
        self.address = address
        self.advice = advice
    }

    public var errnoName: String { ErrnoName.of(errno) }

    public var description: String {
        var text = operation
        if let address { text += " \(address)" }
        text += ": \(errnoName) (\(String(cString: strerror(errno))))"
        if let advice { text += "; \(advice)" }
        return text
    }
}

/// C names of the errno values a UDP relay meets.
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
        case ENOBUFS: "ENOBUFS"
        case ETIMEDOUT: "ETIMEDOUT"
        case ECONNREFUSED: "ECONNREFUSED"
        case EHOSTUNREACH: "EHOSTUNREACH"
        case ETIME: "ETIME"
        case ECANCELED: "ECANCELED"
        default: "errno \(value)"
        }
    }
}

/// Send errors counted by errno in a fixed table, so counting never allocates: the errnos a
/// UDP sender meets get their own slot, the rest share `other`.
public struct SendErrorCounts: Sendable {
    public static let tracked: [Int32] = [
        EAGAIN, ECONNREFUSED, EMSGSIZE, ENOBUFS, EPERM, EACCES, EINVAL, EIO,
        EHOSTUNREACH, ENETUNREACH, EAFNOSUPPORT, EADDRNOTAVAIL, ENOMEM, EFAULT,
    ]
    var counts = InlineArray<15, UInt64>(repeating: 0)

    static func slot(_ errno: Int32) -> Int {
        switch errno {
        case EAGAIN: 0
        case ECONNREFUSED: 1
        case EMSGSIZE: 2
        case ENOBUFS: 3
        case EPERM: 4
        case EACCES: 5
        case EINVAL: 6
        case EIO: 7
        case EHOSTUNREACH: 8
        case ENETUNREACH: 9
        case EAFNOSUPPORT: 10
        case EADDRNOTAVAIL: 11
        case ENOMEM: 12
        case EFAULT: 13
        default: 14
        }
    }

    mutating func add(_ errno: Int32, _ count: UInt64 = 1) { counts[SendErrorCounts.slot(errno)] &+= count }

    public var total: UInt64 {
        var sum: UInt64 = 0
        for index in counts.indices { sum &+= counts[index] }
        return sum
    }

    /// Every count by errno name, zeros included: a fixed, bounded set of labels for metrics.
    public var all: [(name: String, count: UInt64)] {
        counts.indices.map { index in
            (index < SendErrorCounts.tracked.count ? ErrnoName.of(SendErrorCounts.tracked[index]) : "other", counts[index])
        }
    }

    /// Non-zero counts by errno name ("other" for the untracked rest).
    public var byName: [(name: String, count: UInt64)] {
        var result: [(String, UInt64)] = []
        for index in counts.indices where counts[index] > 0 {
            let name = index < SendErrorCounts.tracked.count ? ErrnoName.of(SendErrorCounts.tracked[index]) : "other"
            result.append((name, counts[index]))
        }
        return result
    }

    public mutating func merge(_ other: SendErrorCounts) {
        for index in counts.indices { counts[index] &+= other.counts[index] }
    }
}
