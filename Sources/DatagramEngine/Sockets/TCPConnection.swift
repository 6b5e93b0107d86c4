import Glibc
import NetAddress
import SystemSupport

/// An accepted TCP connection's descriptor and addresses, owned by the engine's socket table
/// from the accept until the stream is released (after its `closed` event and the end of its
/// last system call or io_uring operation). Nothing outside the engine holds one.
final class TCPConnection {
    let owned: Descriptor
    let peer: Endpoint
    let local: Endpoint

    init(_ owned: consuming Descriptor, peer: Endpoint, local: Endpoint) {
        self.owned = owned
        self.peer = peer
        self.local = local
    }

    /// Options of a connection just accepted. No Nagle delay: relayed media and STUN
    /// transactions are small, latency-bound writes. Kernel buffers of a fixed size where asked
    /// for (0 leaves the kernel's autotuning), so that a peer costs what the owner promises.
    static func setUp(_ descriptor: Int32, sendBufferBytes: Int, receiveBufferBytes: Int) {
        let size = socklen_t(MemoryLayout<Int32>.size)
        var one: Int32 = 1
        SystemCall.ignoringFailure { Int(setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, size)) }
        if sendBufferBytes > 0 {
            var value = Int32(clamping: sendBufferBytes)
            SystemCall.ignoringFailure { Int(setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &value, size)) }
        }
        if receiveBufferBytes > 0 {
            var value = Int32(clamping: receiveBufferBytes)
            SystemCall.ignoringFailure { Int(setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &value, size)) }
        }
    }

    /// Closes `descriptor` with a reset rather than a FIN (SO_LINGER 0): for a connection
    /// refused at accept, which the peer should learn of at once and which should not sit in
    /// TIME_WAIT here.
    static func reset(_ descriptor: consuming Descriptor) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        let fd = descriptor.rawValue
        SystemCall.ignoringFailure { Int(setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))) }
        // `descriptor` ends here and closes.
    }
}
