import Glibc
import SystemSupport

/// A dedicated OS thread running one closure: workers are threads with a loop, not tasks,
/// so that nothing else is ever scheduled on them.
final class WorkerThread: Sendable {
    private let handle: pthread_t

    /// `name`: the thread's name for the kernel (`ThreadName`), at most 15 bytes.
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        final class Box: Sendable {
            let name: String
            let body: @Sendable () -> Void
            init(_ name: String, _ body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        var handle = pthread_t()
        let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
        let created = pthread_create(&handle, nil, { argument in
            let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
            ThreadName.set(box.name)
            box.body()
            return nil
        }, box)
        precondition(created == 0, "pthread_create failed: \(created)")
        self.handle = handle
    }

    func join() {
        _ = pthread_join(handle, nil)
    }
}
