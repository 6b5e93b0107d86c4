/// The user_data of every io_uring submission the engine makes: `kind << 56 | generation << 24
/// | slot`. The generation makes a completion for a socket that was closed (and its slot
/// reused) recognisable as stale. Encoded and decoded here only.
///
/// A datagram send's slot is its message's index in the flush, because the flush waits for
/// all of them. A stream's operations carry the stream's socket slot and generation instead:
/// they complete whenever the peer lets them, long after the flush that started them.
struct RingTag: Hashable {
    enum Kind: UInt64 {
        case receive = 1, send = 2, wake = 3, cancel = 4
        /// A listener's multishot accept; a stream's receive, send, and the cancellation of
        /// its operations.
        case accept = 5, streamReceive = 6, streamSend = 7, streamCancel = 8
    }

    let rawValue: UInt64

    init(rawValue: UInt64) { self.rawValue = rawValue }

    init(_ kind: Kind, generation: UInt32 = 0, slot: Int) {
        rawValue = kind.rawValue << 56 | UInt64(generation) << 24 | UInt64(slot & 0xFF_FFFF)
    }

    /// The socket's slot, or for a datagram send its message's index in the flush.
    var kind: Kind? { Kind(rawValue: rawValue >> 56) }
    var slot: Int { Int(rawValue & 0xFF_FFFF) }
    var generation: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 24) }
}

/// One completion, copied out of the completion queue (so that it can be kept for a later turn).
struct RingCompletion {
    var tag: RingTag
    var result: Int32
    var flags: UInt32
}
