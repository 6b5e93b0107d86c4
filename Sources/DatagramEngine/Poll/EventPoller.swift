import Glibc
import CURing
import SystemSupport

/// epoll over an engine's sockets and its wake-up eventfd. Level-triggered: a socket left with
/// datagrams when a batch filled is reported again on the next wait, so nothing is stranded.
/// Each socket is registered with its `SocketID` as the event's tag.
final class EventPoller {
    static let wakeTag = UInt64.max
    private let descriptor: Int32
    private let events: UnsafeMutablePointer<epoll_event>
    private let capacity: Int

    init(capacity: Int) throws(SystemCallError) {
        descriptor = Int32(try SystemCall.require("epoll_create1") { Int(epoll_create1(Int32(EPOLL_CLOEXEC))) })
        self.capacity = capacity
        events = .allocate(capacity: capacity)
    }

    deinit {
        SystemCall.close(descriptor)
        events.deallocate()
    }

    func add(_ fd: Int32, tag: UInt64) throws(SystemCallError) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = tag
        _ = try SystemCall.require("epoll_ctl(ADD)") { Int(epoll_ctl(descriptor, EPOLL_CTL_ADD, fd, &event)) }
    }

    func remove(_ fd: Int32) {
        SystemCall.ignoringFailure { Int(epoll_ctl(descriptor, EPOLL_CTL_DEL, fd, nil)) }
    }

    /// Waits up to `timeout` ms; returns how many events `tag(_:)` can read (0 on failure).
    func wait(timeout: Int32) -> Int {
        if case .done(let ready) = SystemCall.outcome({ Int(epoll_wait(descriptor, events, Int32(capacity), timeout)) }) {
            return ready
        }
        return 0
    }

    @inline(__always)
    func tag(_ index: Int) -> UInt64 { events[index].data.u64 }

    static func tag(_ id: SocketID) -> UInt64 { UInt64(id.generation) << 32 | UInt64(UInt32(bitPattern: id.slot)) }

    static func socket(_ tag: UInt64) -> SocketID {
        SocketID(slot: Int32(truncatingIfNeeded: tag & 0xFFFF_FFFF), generation: UInt32(tag >> 32))
    }
}
