import Glibc
import SystemSupport

/// Listeners whose accept failed for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
/// ENOMEM). Accepting again at once would fail the same way on every turn, and a ready
/// listener (level-triggered epoll, or a multishot accept armed again) would keep the worker
/// spinning; so the backend stops accepting on it for `pause` and resumes it after, as
/// swift-nio's accept backoff does. Its connections wait in the kernel's backlog meanwhile.
/// A listener also waits here, with no time set, while every stream index is taken: it resumes
/// as soon as one is given back (`indexFreed`), and until then its connections wait in the
/// backlog rather than being accepted only to be reset.
final class PausedListeners {
    static let pause: UInt64 = 100_000_000

    private var paused: [(listener: SocketID, until: UInt64)] = []

    /// Whether `code`, from an accept, means "out of descriptors or memory" (pause), rather
    /// than a problem of that one connection (go on).
    static func isShortage(_ code: Int32) -> Bool {
        code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM
    }

    /// When the first paused listener is due, `.max` for none.
    var earliest: UInt64 {
        var earliest = UInt64.max
        for entry in paused { earliest = min(earliest, entry.until) }
        return earliest
    }

    func contains(_ listener: SocketID) -> Bool { paused.contains { $0.listener == listener } }

    func pause(_ listener: SocketID) {
        guard !contains(listener) else { return }
        paused.append((listener, MonotonicClock.now() &+ PausedListeners.pause))
    }

    /// Stops `listener` until a stream index is free again.
    func waitForIndex(_ listener: SocketID) {
        guard !contains(listener) else { return }
        paused.append((listener, .max))
    }

    /// A stream index is free: the listeners waiting for one are due now.
    func indexFreed() {
        for position in paused.indices where paused[position].until == .max { paused[position].until = 0 }
    }

    /// Hands the listeners whose pause is over to `body` (which resumes them, and pauses none)
    /// and forgets them, in place: asked every turn, it builds no list.
    func takeDue(_ body: (SocketID) -> Void) {
        guard !paused.isEmpty else { return }
        let now = MonotonicClock.now()
        let count = paused.count
        var kept = 0
        for position in 0..<count {
            let entry = paused[position]
            if entry.until <= now {
                body(entry.listener)
            } else {
                paused[kept] = entry
                kept += 1
            }
        }
        precondition(paused.count == count, "a listener was paused while the due ones were taken")
        paused.removeLast(count - kept)
    }
}
