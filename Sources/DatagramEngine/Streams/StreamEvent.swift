import NetAddress
/// Something that happened to a stream or a listener in the last turn, besides datagrams.
/// `owner` is the tag to dispatch on, as it stood when the event was made: for `accepted` the
/// listener's (the new stream is still unowned: its owner names itself with `setOwner`), for
/// the others the stream's. A stream's events come in its life's order: one `accepted`, then
/// from the next turn on any number of `data` and `writable`, then exactly one `closed` (unless
/// it was disowned). An owner frees its entry on `closed`, and not before.
public struct StreamEvent: Equatable {
    public enum Kind: Equatable {
        /// A connection on listener `listener` became stream `stream`, from `peer` to `local`.
        case accepted(listener: SocketID, peer: Endpoint, local: Endpoint)
        /// New bytes arrived: `available` bytes are in the stream's input now (`input`).
        case data(available: Int)
        /// Output fell below the low water mark after a refused `write`: write again.
        case writable
        /// The stream is gone (see `StreamCloseReason`); its input stays readable until the next
        /// `receive`, and its identifier then stops naming it.
        case closed(StreamCloseReason)
    }

    public var owner: OwnerTag
    public var stream: SocketID
    public var kind: Kind
}

/// Why a stream closed.
public enum StreamCloseReason: Equatable, Sendable {
    /// The peer closed its side (a FIN): everything it sent was delivered before this.
    case peerClosed
    /// The connection failed: a reset from the peer (RST), or another error the kernel
    /// reported on it (ETIMEDOUT, EHOSTUNREACH...).
    case reset
    /// The kernel refused the connection's I/O for want of memory (ENOBUFS, ENOMEM): the engine
    /// closes rather than retry in a loop.
    case limit
    /// Its deadline passed (`setDeadline`), or an owner's close could not send the pending
    /// output within its deadline or the linger time.
    case timeout
    /// The owner closed it (`close`) and its pending output, if kept, was sent.
    case byOwner
}
