import CLoadGen

/// The layout of the kernel's `struct mmsghdr`, which the load generator's C shim declares
/// (`lg_mmsghdr`): the vectors of `SendBatch` and `ReceiveBatch` are arrays of it.
enum MultiMessage {
    static let stride = MemoryLayout<lg_mmsghdr>.stride
    static let lengthOffset = MemoryLayout<lg_mmsghdr>.offset(of: \.msg_len)!
}
