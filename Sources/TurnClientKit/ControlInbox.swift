import Synchronization

/// STUN messages that arrive on TURN client sockets while the receiving thread owns them
/// (answers to refreshes during a run), handed to the thread that runs the transactions.
///
/// Only control messages pass through here (a few per client every few minutes), never the
/// measured datagrams, so the lock is off the packet path. Bounded: past `capacity` waiting
/// messages the newest are dropped, so a server that floods the clients costs memory no more.
public final class ControlInbox: Sendable {
    public static let capacity = 65_536
    private let messages = Mutex<[(fd: Int32, bytes: [UInt8])]>([])

    public init() {}

    package func put(fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        messages.withLock { if $0.count < Self.capacity { $0.append((fd, Array(bytes))) } }
    }

    /// Everything waiting, oldest first; the inbox is empty afterwards.
    package func take() -> [(fd: Int32, bytes: [UInt8])] {
        messages.withLock { list in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
    }
}
