import Glibc
import SystemSupport
import CURing

/// epoll over the engine's sockets and its wake-up eventfd, for the perPacket and mmsg
/// backends. Level-triggered: a socket left with datagrams when a batch filled is reported
/// again on the next wait, so nothing is stranded.
final class EventPoller {
    static let wakeTag = UInt64.max
    let descriptor: Int32
    let events: UnsafeMutablePointer<epoll_event>
    let capacity: Int

    init(capacity: Int) throws(SystemCallError) {
        descriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard descriptor >= 0 else { throw SystemCallError("epoll_create1", errno: errno) }
        self.capacity = capacity
        events = .allocate(capacity: capacity)
    }

    deinit {
        close(descriptor)
        events.deallocate()
    }

    func add(_ fd: Int32, tag: UInt64) throws(SystemCallError) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = tag
        guard epoll_ctl(descriptor, EPOLL_CTL_ADD, fd, &event) == 0 else {
            throw SystemCallError("epoll_ctl(ADD)", errno: errno)
        }
    }

    func remove(_ fd: Int32) {
        _ = epoll_ctl(descriptor, EPOLL_CTL_DEL, fd, nil)
    }

    /// Waits up to `timeout` ms; returns how many events are in `events`.
    func wait(timeout: Int32) -> Int {
        while true {
            let ready = epoll_wait(descriptor, events, Int32(capacity), timeout)
            if ready >= 0 { return Int(ready) }
            if errno != EINTR { return 0 }
        }
    }
}

/// An eventfd that another thread writes to wake the engine's thread from its wait.
/// Safe to use from any thread.
public struct EngineWaker: Sendable {
    let descriptor: Int32

    public func wake() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, 8)
    }
}
