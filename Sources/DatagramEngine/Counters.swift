import Glibc
import NetAddress
import SystemSupport

/// What an engine has done, as plain integers owned by the thread that runs it. The relay
/// copies them into snapshots for the HTTP thread; nothing here is shared or locked.
public struct EngineCounters: Sendable, SummedCounters {
    public var datagramsIn: UInt64 = 0
    public var bytesIn: UInt64 = 0
    public var datagramsOut: UInt64 = 0
    public var bytesOut: UInt64 = 0
    /// System calls made for I/O; one io_uring_enter counts as one.
    public var syscalls: UInt64 = 0
    /// Receive calls that returned at least one datagram: a recvmsg or recvmmsg on one socket
    /// (perPacket, mmsg), or a turn's reap of completions from every socket (uring).
    public var receiveBatches: UInt64 = 0
    /// Datagrams per receive batch, in buckets whose inclusive upper bounds are
    /// `batchSizeBounds` (the last bucket takes everything larger).
    public var batchSizes = InlineArray<9, UInt64>(repeating: 0)
    public static let batchSizeBounds: [Int] = [1, 2, 4, 8, 16, 32, 64, 128]
    /// Turns that received at least one datagram, whatever the number of receive calls they
    /// took: a wake-up of the worker (or a turn that found datagrams waiting). With one socket
    /// per flow, mmsg's receive calls stay small while a turn gathers from many sockets; the
    /// two histograms side by side show it.
    public var receiveTurns: UInt64 = 0
    /// Datagrams per such turn, in the buckets of `batchSizeBounds`.
    public var turnSizes = InlineArray<9, UInt64>(repeating: 0)
    /// Datagrams the kernel dropped because a socket's receive queue was full (SO_RXQ_OVFL).
    public var kernelDrops: UInt64 = 0
    /// Datagrams longer than the receive buffer (MSG_TRUNC): counted and dropped.
    public var truncated: UInt64 = 0
    public var sendErrors = SendErrorCounts()
    public var ecnIn = InlineArray<4, UInt64>(repeating: 0)
    public var ecnOut = InlineArray<4, UInt64>(repeating: 0)
    /// Datagrams that left as segments of a UDP GSO send, and the sends that carried them.
    public var gsoSegments: UInt64 = 0
    public var gsoSends: UInt64 = 0
    /// Sockets on which GSO was turned off after the kernel refused it (EIO/EINVAL).
    public var gsoFallbacks: UInt64 = 0
    /// Datagrams that arrived as segments of one UDP GRO buffer (split for routing).
    public var groSegments: UInt64 = 0
    /// io_uring multishot receives that ended and were armed again; many of them mean the
    /// provided buffers ran out (the worker is behind).
    public var receiveRestarts: UInt64 = 0
    /// io_uring receives that ended with a lasting error and were not re-armed.
    public var receiveFailures: UInt64 = 0
    /// io_uring receives of sockets being closed whose last completion did not come within
    /// 200 ms of the cancellation (and a shutdown for reading): released without it
    /// (`RingBackend.unregister`). Never expected; counted so that it shows.
    public var receiveCancelsForced: UInt64 = 0
    /// Connections accepted as streams, and those refused at accept (no free stream: reset at
    /// once) or failed there (EMFILE, ENFILE, ENOBUFS: the backlog keeps them for later turns).
    public var streamsAccepted: UInt64 = 0
    public var streamsRefused: UInt64 = 0
    public var acceptErrors: UInt64 = 0
    /// Bytes read from and written to streams (not in bytesIn / bytesOut, which are datagrams').
    public var streamBytesIn: UInt64 = 0
    public var streamBytesOut: UInt64 = 0
    /// `write`s refused past the high water mark or on a closing stream: the caller dropped them.
    public var streamWritesRefused: UInt64 = 0
    /// Streams closed, for any reason (each one `closed` event).
    public var streamsClosed: UInt64 = 0

    public init() {}

    /// The plain counters `merge` sums (CountersMergeTests checks none is missing).
    public static var summedFields: [WritableKeyPath<EngineCounters, UInt64>] {
        [\.datagramsIn, \.bytesIn, \.datagramsOut, \.bytesOut, \.syscalls, \.receiveBatches, \.kernelDrops,
         \.receiveTurns, \.truncated, \.gsoSegments, \.gsoSends, \.gsoFallbacks, \.groSegments, \.receiveRestarts, \.receiveFailures, \.receiveCancelsForced,
         \.streamsAccepted, \.streamsRefused, \.acceptErrors, \.streamBytesIn, \.streamBytesOut, \.streamWritesRefused,
         \.streamsClosed]
    }

    mutating func noteBatch(_ size: Int) {
        guard size > 0 else { return }
        receiveBatches &+= 1
        batchSizes[Self.bucket(size)] &+= 1
    }

    mutating func noteTurn(_ size: Int) {
        guard size > 0 else { return }
        receiveTurns &+= 1
        turnSizes[Self.bucket(size)] &+= 1
    }

    /// The histogram bucket of `size` datagrams (`batchSizeBounds`; the last takes the rest).
    @inline(__always)
    static func bucket(_ size: Int) -> Int {
        var bucket = 0
        while bucket < 8 && size > batchSizeBounds[bucket] { bucket += 1 }
        return bucket
    }

    public func ecnIn(_ codepoint: ECN) -> UInt64 { ecnIn[Int(codepoint.rawValue)] }
    public func ecnOut(_ codepoint: ECN) -> UInt64 { ecnOut[Int(codepoint.rawValue)] }

    /// Adds another worker's counters, for totals.
    public mutating func merge(_ other: EngineCounters) {
        add(other)
        batchSizes.add(other.batchSizes)
        turnSizes.add(other.turnSizes)
        ecnIn.add(other.ecnIn)
        ecnOut.add(other.ecnOut)
        sendErrors.merge(other.sendErrors)
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
        counts.add(other.counts)
    }
}
