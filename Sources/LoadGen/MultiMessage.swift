import Glibc

/// sendmmsg(2) and recvmmsg(2), and the layout of `struct mmsghdr`.
///
/// Glibc declares these only under _GNU_SOURCE, which the Swift Glibc module does not
/// define, and LoadGen has no C module of its own (it must not depend on the relay's). So the
/// two functions are looked up once with dlsym and called through C function pointers, and
/// `struct mmsghdr { struct msghdr msg_hdr; unsigned int msg_len; }` is laid out by hand in raw
/// memory: `msghdr` at offset 0, `msg_len` right after it, stride rounded to 8.
enum MultiMessage {
    typealias SendFunction = @convention(c) (Int32, UnsafeMutableRawPointer, UInt32, Int32) -> Int32
    typealias ReceiveFunction = @convention(c) (Int32, UnsafeMutableRawPointer, UInt32, Int32, UnsafeMutableRawPointer?) -> Int32

    static let lengthOffset = MemoryLayout<msghdr>.size
    static let stride = (MemoryLayout<msghdr>.size + MemoryLayout<UInt32>.size + 7) & ~7

    static let send: SendFunction = unsafeBitCast(symbol("sendmmsg"), to: SendFunction.self)
    static let receive: ReceiveFunction = unsafeBitCast(symbol("recvmmsg"), to: ReceiveFunction.self)

    private static func symbol(_ name: String) -> UnsafeMutableRawPointer {
        let handle = dlopen(nil, RTLD_NOW)
        guard let pointer = dlsym(handle, name) else {
            fatalError("\(name) not found in the C library (Linux >= 3.0 and glibc >= 2.14 have it)")
        }
        return pointer
    }

    /// The `msghdr` of message `i` in a vector starting at `base`.
    @inline(__always)
    static func header(_ base: UnsafeMutableRawPointer, _ i: Int) -> UnsafeMutablePointer<msghdr> {
        (base + i * stride).assumingMemoryBound(to: msghdr.self)
    }

    /// `msg_len` of message `i`: bytes sent or received.
    @inline(__always)
    static func length(_ base: UnsafeMutableRawPointer, _ i: Int) -> Int {
        Int(base.load(fromByteOffset: i * stride + lengthOffset, as: UInt32.self))
    }
}
