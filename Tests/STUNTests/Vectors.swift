/// The published STUN test vectors: RFC 5769 section 2 and RFC 8489 Appendix B.1 as corrected
/// by verified erratum 6268 (the published bytes are wrong; see shared notes turn-interop.md).
enum Vectors {
    /// RFC 5769 2.1: a Binding request with short-term credentials, password below.
    static let request = bytes("""
        000100582112a442b7e7a701bc34d686fa87dfae
        802200105354554e207465737420636c69656e74
        002400046e0001ff
        80290008932ff9b151263b36
        000600096576746a3a68367659202020
        000800149aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a2
        80280004e57a3bcf
        """)
    static let shortTermPassword = "VOkJxbRl1RmTxUk/WvJxBt"

    /// RFC 5769 2.2: a success response with an IPv4 XOR-MAPPED-ADDRESS 192.0.2.1:32853.
    static let responseIPv4 = bytes("""
        0101003c2112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f72
        20002000080001a147e112a643000800142b91f599fd9e90c38c7489f92af9ba53f06b
        e7d780280004c07d4c96
        """)

    /// RFC 5769 2.3: the same with IPv6 2001:db8:1234:5678:11:2233:4455:6677 port 32853.
    static let responseIPv6 = bytes("""
        010100482112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f72
        20002000140002a1470113a9faa5d3f179bc25f4b5bed2b9d900080014a382954e4be6
        7bf11784c97c8292c275bfe3ed4180280004c8fb0b4c
        """)

    /// RFC 5769 2.4: a request with long-term credentials.
    static let longTerm = bytes("""
        000100602112a44278ad3433c6ad72c029da412e00060012e3839ee38388e383aae383
        83e382afe382b90000001500 1c662f2f3439396b3935346436 4f4c33346f4c394653
        54767936347341 0014000b6578616d706c652e6f726700 00080014f67024656dd64a
        3e02b8e0712e85c9a28ca89666
        """)
    static let username = "\u{30DE}\u{30C8}\u{30EA}\u{30C3}\u{30AF}\u{30B9}"
    static let realm = "example.org"
    static let password = "TheMatrIX"
    static let nonce = "f//499k954d6OL34oL9FSTvy64sA"

    /// RFC 8489 B.1 as corrected by erratum 6268: USERHASH, NONCE, REALM, PASSWORD-ALGORITHM
    /// SHA-256, MESSAGE-INTEGRITY-SHA256 keyed by SHA-256(username:realm:password).
    static let sha256 = bytes("""
        000100902112a44278ad3433c6ad72c029da412e
        001e00204a3cf38fef6992bda952c6780417da0f24819415569e60b205c46e41407f1704
        001500296f624d61744a6f733241414143662f2f3439396b3935346436
        4f4c33346f4c39465354767936347341000000
        0014000b6578616d706c652e6f726700
        001d000400020000
        001c0020b5c7bf005b6c52a21c51c5e892f81924136296cb927c43149309278cc6518e65
        """)
    static let sha256Nonce = "obMatJos2AAACf//499k954d6OL34oL9FSTvy64sA"

    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.filter(\.isHexDigit))
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }
}
