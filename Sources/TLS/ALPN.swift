import CSSL

/// Application-Layer Protocol Negotiation for TURN over TLS (RFC 7443): the one protocol name
/// the server accepts, the client's offer in wire form, and the server's choice.
enum ALPN {
    /// RFC 7443's name for STUN and TURN over (D)TLS.
    static let turn = "stun.turn"

    /// `protocols` as the ClientHello carries them: each name after its length byte.
    static func wire(_ protocols: [String]) throws(TLSError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw TLSError("ALPN protocol name \"\(name)\" must be 1 to 255 bytes")
            }
            wire.append(UInt8(bytes.count))
            wire += bytes
        }
        return wire
    }

    /// The server's select callback: "stun.turn" when the client offers it; otherwise no ALPN
    /// at all (SSL_TLSEXT_ERR_NOACK), so a client that offers nothing or only other protocols
    /// (browsers' TURN clients may) still connects. Never a fatal alert.
    static let selectTURN: SSL_CTX_alpn_select_cb_func = { _, selected, selectedLength, offered, offeredLength, _ in
        guard let selected, let selectedLength, let offered else { return SSL_TLSEXT_ERR_NOACK }
        let wanted = Array(ALPN.turn.utf8)
        var index = 0
        let end = Int(offeredLength)
        while index < end {
            let length = Int(offered[index])
            let start = index + 1
            guard start + length <= end else { break }
            if length == wanted.count && (0..<length).allSatisfy({ offered[start + $0] == wanted[$0] }) {
                // Points into the client's list, which the library keeps until it has copied the choice.
                selected.pointee = offered + start
                selectedLength.pointee = UInt8(length)
                return SSL_TLSEXT_ERR_OK
            }
            index = start + length
        }
        return SSL_TLSEXT_ERR_NOACK
    }
}
