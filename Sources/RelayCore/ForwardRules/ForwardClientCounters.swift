import NetAddress

/// What one forward-rule client's datagrams did, both ways: plain integers its worker writes
/// on the packet path and reads once, when the client ends (its accounting record).
struct ForwardClientCounters {
    /// One direction: bytes relayed, and datagrams by the ECN codepoint they arrived with and
    /// the one they left with (a 4 x 4 table by codepoint value: one increment a datagram, and
    /// everything the record needs follows from it).
    struct Direction {
        var bytes: UInt64 = 0
        var ecn = InlineArray<16, UInt64>(repeating: 0)

        @inline(__always)
        mutating func count(_ bytes: Int, received: ECN, sent: ECN) {
            self.bytes &+= UInt64(bytes)
            ecn[Int(received.rawValue) << 2 | Int(sent.rawValue)] &+= 1
        }

        var packets: UInt64 { ecnReceived.reduce(0, &+) }

        /// Datagrams by codepoint as they arrived.
        var ecnReceived: [UInt64] {
            (0..<4).map { received in (0..<4).reduce(0) { $0 &+ ecn[received << 2 | $1] } }
        }

        /// Datagrams by codepoint as they left.
        var ecnSent: [UInt64] {
            (0..<4).map { sent in (0..<4).reduce(0) { $0 &+ ecn[$1 << 2 | sent] } }
        }

        /// Datagrams that left CE without arriving CE: marked by the relay.
        var ceMarked: UInt64 {
            let ce = Int(ECN.ce.rawValue)
            return (0..<4).filter { $0 != ce }.reduce(0) { $0 &+ ecn[$1 << 2 | ce] }
        }
    }

    /// Client to upstream, and upstream to client.
    var up = Direction()
    var down = Direction()
    var drops = DropCounts()
}
