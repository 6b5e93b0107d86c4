import Glibc
import SystemSupport

/// An eventfd that another thread writes to wake an engine's thread from its wait. Safe to use
/// from any thread. The engine owns the descriptor and closes it when it goes away.
public struct EngineWaker: Sendable {
    let descriptor: Int32

    public func wake() {
        var one: UInt64 = 1
        // EAGAIN means the counter is already non-zero: the engine will wake anyway.
        SystemCall.ignoringFailure { write(descriptor, &one, 8) }
    }

    /// Takes the wake-up count so the next wait sleeps again.
    func drain() {
        var value: UInt64 = 0
        SystemCall.ignoringFailure { read(descriptor, &value, 8) }
    }
}
