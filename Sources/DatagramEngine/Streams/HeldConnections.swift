import SystemSupport

/// Connections io_uring accepted while no stream index was free: a multishot accept takes the
/// listener's whole backlog at once, so those it took between the last index being taken and
/// the kernel seeing the accept cancelled are kept here, oldest first, and adopted as indices
/// come back, rather than reset. Bounded by `limit`, what `ListenerOptions.backlog` and
/// net.core.somaxconn let wait (4,096 each by default); the descriptors are owned here until
/// handed on, and closed with this object.
final class HeldConnections {
    static let limit = 4096

    private var held: [(descriptor: Int32, listener: SocketID)] = []

    init() { held.reserveCapacity(HeldConnections.limit) }

    deinit { for connection in held { SystemCall.close(connection.descriptor) } }

    var isEmpty: Bool { held.isEmpty }
    var isFull: Bool { held.count >= HeldConnections.limit }

    /// Keeps `descriptor` (the caller has checked `isFull`).
    func keep(_ descriptor: consuming Descriptor, listener: SocketID) {
        held.append((descriptor.release(), listener))
    }

    /// Hands the oldest connections on to `adopt` while `wanted()` holds.
    func handOver(while wanted: () -> Bool, to adopt: (consuming Descriptor, SocketID) -> Void) {
        var taken = 0
        while taken < held.count && wanted() {
            adopt(Descriptor(taking: held[taken].descriptor), held[taken].listener)
            taken += 1
        }
        held.removeFirst(taken)
    }
}
