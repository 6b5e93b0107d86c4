import STUN

extension StunMessage {
    /// ERROR-CODE of an error response: nil when absent or malformed.
    var errorCode: (code: Int, reason: String)? {
        (try? value(.errorCode, AttributeValue.errorCode)) ?? nil
    }
}
