import NetAddress

/// When a worker that falls behind marks ECT datagrams CE: by each datagram's sojourn, the time
/// from the kernel's receipt (`ReceivedDatagram.receivedAt`, its receive timestamp) to the turn
/// that forwards it, which is the wait in the socket's queue a router's AQM would see in its
/// own. A step at each threshold, as CoDel's ce_threshold and DualPI2's L4S step mark:
///
/// - ECT(1) (L4S, RFC 9331) past `l4s` (default 1 ms, DualPI2's step threshold): a scalable
///   sender wants an immediate, shallow signal and reduces in proportion to the marks.
/// - ECT(0) (classic, RFC 3168) past `classic` (default 5 ms, CoDel's target): a classic
///   sender halves on a mark, so it is told only of a queue deeper than a few batches.
///
/// Not-ECT and CE are never marked; a datagram without a timestamp (receive timestamps off)
/// never is either. Contract: `l4s < classic` (`OptionKey` refuses anything else).
public struct BacklogThresholds: Sendable, Equatable {
    /// Nanoseconds of sojourn past which ECT(1), then ECT(0), is marked.
    public let l4s: Int64
    public let classic: Int64

    /// The documented defaults, in microseconds.
    public static let defaultL4SMicroseconds = 1_000
    public static let defaultClassicMicroseconds = 5_000

    public init(l4sMicroseconds: Int = BacklogThresholds.defaultL4SMicroseconds,
                classicMicroseconds: Int = BacklogThresholds.defaultClassicMicroseconds) {
        l4s = Int64(l4sMicroseconds) * 1_000
        classic = Int64(classicMicroseconds) * 1_000
    }

    /// Whether a datagram the kernel received at `receivedAt` (0: unknown) and leaving with
    /// `ecn` has waited too long by `now` (both `MonotonicClock` nanoseconds). A wall clock set
    /// backwards between the kernel's stamp and the turn's conversion gives a negative wait,
    /// which marks nothing. Two compares; no clock read.
    @inline(__always)
    func marks(_ ecn: ECN, receivedAt: UInt64, now: UInt64) -> Bool {
        guard receivedAt != 0 else { return false }
        let sojourn = Int64(bitPattern: now &- receivedAt)
        switch ecn {
        case .ect1: return sojourn > l4s
        case .ect0: return sojourn > classic
        case .notECT, .ce: return false
        }
    }
}
