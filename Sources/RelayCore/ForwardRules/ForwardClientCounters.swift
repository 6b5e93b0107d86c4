import NetAddress

/// What one forward-rule client's datagrams did, both ways: plain integers its worker writes
/// on the packet path and reads once, when the client ends (its accounting record).
struct ForwardClientCounters {
    /// One direction: datagrams and bytes relayed, ECN codepoints by value as received and as
    /// sent, and how many the relay marked CE itself.
    struct Direction {
        var packets: UInt64 = 0
        var bytes: UInt64 = 0
        var ecnReceived = InlineArray<4, UInt64>(repeating: 0)
        var ecnSent = InlineArray<4, UInt64>(repeating: 0)
        var ceMarked: UInt64 = 0

        @inline(__always)
        mutating func count(_ bytes: Int, received: ECN, sent: ECN) {
            packets &+= 1
            self.bytes &+= UInt64(bytes)
            ecnReceived[Int(received.rawValue)] &+= 1
            ecnSent[Int(sent.rawValue)] &+= 1
            // It leaves CE but did not arrive CE: the relay marked it.
            ceMarked &+= sent == .ce && received != .ce ? 1 : 0
        }
    }

    /// Client to upstream, and upstream to client.
    var up = Direction()
    var down = Direction()
    var drops = DropCounts()
}
