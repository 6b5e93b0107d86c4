/// How a session carries RTCP.
///
/// WebRTC multiplexes RTCP on the RTP port (RFC 5761): one port per leg is enough. RTP senders
/// that follow the older RFC 3550 habit (ffmpeg, GStreamer without rtcp-mux, many SIP phones)
/// send RTCP to the RTP port + 1. With one port per leg that port + 1 is some other leg, which
/// such a sender would latch or feed; `pair` gives each leg an even RTP port and the odd port
/// after it as its RTCP companion, and forwards RTCP between the companions only.
public enum RTCPMode: String, Sendable, CaseIterable {
    /// One port per leg: RTCP, if any, shares it (rtcp-mux). The default.
    case mux
    /// Per leg an even RTP port and the next odd port for RTCP.
    case pair

    /// Sockets per leg.
    public var portsPerLeg: Int { self == .pair ? 2 : 1 }
}
