import STUN

extension StunMessage {
    /// ERROR-CODE of an error response: nil when absent or malformed. The reason is cleaned for
    /// printing: coturn pads some reasons with NUL bytes, and a server's text is not trusted.
    package var errorCode: (code: Int, reason: String)? {
        guard let error = (try? value(.errorCode, AttributeValue.errorCode)) ?? nil else { return nil }
        let printable = error.reason.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }
        var reason = String(String.UnicodeScalarView(printable))
        while reason.last == " " { reason.removeLast() }
        return (error.code, reason)
    }
}
