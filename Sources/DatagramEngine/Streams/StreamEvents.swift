/// One turn's stream events, in a list allocated once with room for `capacity` (the
/// configuration's `streamEventsPerTurn`): filling it never allocates. The list is rebuilt by
/// each `receive` and read until the next; when a turn has more to say than fits, the rest
/// stays with the streams and is said in the next turns, in order, none lost.
final class StreamEvents {
    let capacity: Int
    private let events: UnsafeMutablePointer<StreamEvent>
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        events = .allocate(capacity: max(capacity, 1))
    }

    deinit {
        events.deinitialize(count: count)
        events.deallocate()
    }

    var isFull: Bool { count >= capacity }

    subscript(index: Int) -> StreamEvent { events[index] }

    func removeAll() {
        events.deinitialize(count: count)
        count = 0
    }

    /// Adds one event; the caller checks `isFull` first.
    func append(_ event: StreamEvent) {
        precondition(count < capacity)
        (events + count).initialize(to: event)
        count += 1
    }

    /// Takes this turn's events of `socket` (a stream, or a listener's accepted events) from
    /// their owner (see `DatagramEngine.disown`).
    func disown(_ socket: SocketID) {
        for index in 0..<count {
            if events[index].stream == socket {
                events[index].owner = .unowned
            } else if case .accepted(let listener, _, _) = events[index].kind, listener == socket {
                events[index].owner = .unowned
            }
        }
    }
}
