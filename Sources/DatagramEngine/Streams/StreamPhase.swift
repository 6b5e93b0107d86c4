/// Where a stream is in its life, and the only moves between phases. `StreamTable.move` is the
/// one place a stream's phase changes; an event its phase does not allow is a bug in the engine
/// (a precondition failure in debug builds; ignored in release, where the phase stays).
///
/// ```
/// free ──accept──▶ open ──drain──▶ draining
///                   │                 │
///                   └──close──▶ closing ◀──close──┘
///                                 │
///                              finish ──▶ closed ──release──▶ free
/// ```
/// `open`: reading and sending. `draining`: the owner closed it keeping its output, so no more
/// reading, sending until the output is gone (or its deadline passes). `closing`: no more I/O;
/// the backend stops what it has in flight and then `finish`es it. `closed`: its `closed` event
/// is reported; `release` (at the start of the next turn) closes its descriptor and frees the
/// index.
enum StreamPhase: UInt8, CaseIterable {
    case free, open, draining, closing, closed

    /// What moves a stream from one phase to the next.
    enum Event: UInt8, CaseIterable {
        /// A connection was accepted into this index.
        case accept
        /// The owner closed the stream keeping its pending output.
        case drain
        /// The connection ended or must end (owner, peer, error, deadline, drained).
        case close
        /// The backend has nothing in flight for the closing stream any more.
        case finish
        /// Its `closed` event was reported a turn ago: the index is free again.
        case release
    }

    /// The phase `event` leads to from this one; nil when this phase does not allow it.
    func after(_ event: Event) -> StreamPhase? {
        switch (self, event) {
        case (.free, .accept): return .open
        case (.open, .drain): return .draining
        case (.open, .close), (.draining, .close): return .closing
        case (.closing, .finish): return .closed
        case (.closed, .release): return .free
        default: return nil
        }
    }

    /// Reading or sending still goes on (`open` or `draining`): a `close` is allowed.
    var isLive: Bool { self == .open || self == .draining }
}
