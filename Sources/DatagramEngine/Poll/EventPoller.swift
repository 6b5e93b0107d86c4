import Glibc
import CURing
import SystemSupport

/// epoll over an engine's sockets and its wake-up eventfd. Level-triggered: a socket left with
/// datagrams when a batch filled is reported again on the next wait, so nothing is stranded.
/// Each socket is registered with its `SocketID` as the event's tag. Datagram sockets and
/// listeners wait for input only; a stream's events change with its state (`modify`): input
/// while its input buffer has room, output while it has output pending.
final class EventPoller {
    static let wakeTag = UInt64.max
    static let input = EPOLLIN.rawValue
    static let output = EPOLLOUT.rawValue
    /// The peer closed its side: read to the end (a read then returns 0).
    static let peerHangUp = EPOLLRDHUP.rawValue
    /// Always reported, whatever was asked for: the connection is finished or failed.
    static let hangUpOrError = EPOLLHUP.rawValue | EPOLLERR.rawValue

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

    func add(_ fd: Int32, tag: UInt64, events mask: UInt32 = EventPoller.input) throws(SystemCallError) {
        var event = epoll_event()
        event.events = mask
        event.data.u64 = tag
        _ = try SystemCall.require("epoll_ctl(ADD)") { Int(epoll_ctl(descriptor, EPOLL_CTL_ADD, fd, &event)) }
    }

    /// Changes what `fd` is watched for. Returns false when the kernel refused (ENOMEM).
    func modify(_ fd: Int32, tag: UInt64, events mask: UInt32) -> Bool {
        var event = epoll_event()
        event.events = mask
        event.data.u64 = tag
        return SystemCall.ownOutcome("epoll_ctl(MOD)") { Int(epoll_ctl(descriptor, EPOLL_CTL_MOD, fd, &event)) } == .done(0)
    }

    func remove(_ fd: Int32) {
        SystemCall.ignoringFailure { Int(epoll_ctl(descriptor, EPOLL_CTL_DEL, fd, nil)) }
    }

    /// Waits up to `timeout` ms; returns how many events `tag(_:)` can read (0 on failure).
    func wait(timeout: Int32) -> Int {
        if case .done(let ready) = SystemCall.ownOutcome("epoll_wait", { Int(epoll_wait(descriptor, events, Int32(capacity), timeout)) }) {
            return ready
        }
        return 0
    }

    @inline(__always)
    func tag(_ index: Int) -> UInt64 { events[index].data.u64 }

    /// What happened to event `index`'s socket (EPOLLIN, EPOLLOUT, ... bits).
    @inline(__always)
    func flags(_ index: Int) -> UInt32 { events[index].events }

    static func tag(_ id: SocketID) -> UInt64 { UInt64(id.generation) << 32 | UInt64(UInt32(bitPattern: id.slot)) }

    static func socket(_ tag: UInt64) -> SocketID {
        SocketID(slot: Int32(truncatingIfNeeded: tag & 0xFFFF_FFFF), generation: UInt32(tag >> 32))
    }
}
