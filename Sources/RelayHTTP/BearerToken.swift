/// Whether `request` carries `Authorization: Bearer <token>` for the configured token.
///
/// Contract: no configured token (nil) means the API is open and every request is authorized;
/// an empty configured token authorizes nothing (fail closed rather than accept "Bearer ").
/// The scheme name is case-insensitive (RFC 9110); the token is compared in time that does not
/// depend on where the first differing byte is, so response timing cannot reveal a prefix.
public func isAuthorized(_ request: HTTPRequest, token: String?) -> Bool {
    guard let token else { return true }
    guard !token.isEmpty, let field = request.headers["Authorization"] else { return false }
    let scheme = "bearer "
    guard field.count > scheme.count, field.prefix(scheme.count).lowercased() == scheme else { return false }
    let presented = field.dropFirst(scheme.count)
    return constantTimeEqual(Array(presented.utf8), Array(token.utf8))
}

/// Compares every byte of the longer input whatever the contents; only the lengths leak.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var difference = UInt8(truncatingIfNeeded: a.count ^ b.count) | (a.count == b.count ? 0 : 1)
    for i in 0..<max(a.count, b.count) {
        let x = i < a.count ? a[i] : 0
        let y = i < b.count ? b[i] : 0
        difference |= x ^ y
    }
    return difference == 0
}
