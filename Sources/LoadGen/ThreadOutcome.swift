import Foundation
import Synchronization

/// Runs a closure on its own thread and hands its value back to the thread that waits.
/// The value crosses threads once, under the lock; nothing else is shared.
final class ThreadOutcome<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func start(name: String, _ body: @escaping @Sendable () -> Value) {
        let thread = Thread { [self] in
            let v = body()
            value.withLock { $0 = v }
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    var isDone: Bool { value.withLock { $0 != nil } }

    func wait() -> Value {
        done.wait()
        return value.withLock { $0! }
    }
}
