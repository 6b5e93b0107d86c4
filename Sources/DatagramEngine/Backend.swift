/// Which system calls move the datagrams.
public enum Backend: String, Sendable, CaseIterable {
    /// One recvmsg and one sendmsg per datagram: the baseline batching is measured against.
    case perPacket = "perpacket"
    /// recvmmsg / sendmmsg over preallocated vectors.
    case mmsg
    /// io_uring: multishot receive over a provided-buffer ring, every send of a flush in one submit.
    case uring
}
