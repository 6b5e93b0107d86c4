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
