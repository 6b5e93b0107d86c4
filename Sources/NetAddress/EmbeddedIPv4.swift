extension Endpoint {
    /// The IPv4 endpoint an IPv6 address of a transition form reaches, or nil: the peer policy
    /// judges such a peer as the IPv4 address a gateway or tunnel delivers it to, so no deny
    /// list, own address or own port can be slipped past by writing it another way.
    ///
    /// - NAT64 (RFC 6052 well-known prefix 64:ff9b::/96, and RFC 8215's local-use 64:ff9b:1::/48):
    ///   the last 32 bits. The local-use block may carry other RFC 6052 layouts; reading the /96
    ///   one from all of it errs towards refusing, which is the side to err on.
    /// - 6to4 (RFC 3056, 2002::/16): bits 16-47, the site's IPv4 address.
    /// - Teredo (RFC 4380, 2001::/32): the client's mapped address, the last 32 bits inverted;
    ///   the port (bits 80-95) is inverted too, but a permission or port check is about the
    ///   address it reaches, so the port is kept as given.
    /// - ISATAP (RFC 5214): an interface identifier of 0000:5efe (u and g bits aside) before the
    ///   IPv4 address, under any prefix.
    ///
    /// IPv4-mapped addresses (::ffff:a.b.c.d) need no translation: `Endpoint` stores IPv4 in that
    /// form already, so they are the IPv4 address itself.
    public var embeddedIPv4: Endpoint? {
        guard !isIPv4 else { return nil }
        let last32 = UInt32(truncatingIfNeeded: low)
        if high == Endpoint.nat64WellKnown || high >> 16 == Endpoint.nat64LocalUse { return Endpoint(ipv4: last32, port: port) }
        if high >> 48 == 0x2002 { return Endpoint(ipv4: UInt32(truncatingIfNeeded: high >> 16), port: port) }
        if high >> 32 == 0x2001_0000 { return Endpoint(ipv4: ~last32, port: port) }
        // The u and g bits (0x01, 0x02 of the first byte) may be set in an ISATAP identifier.
        if (low >> 32) & 0xFCFF_FFFF == 0x0000_5EFE { return Endpoint(ipv4: last32, port: port) }
        return nil
    }

    /// 64:ff9b::/96: the upper 64 bits.
    private static let nat64WellKnown: UInt64 = 0x0064_FF9B_0000_0000
    /// 64:ff9b:1::/48: the upper 48 bits.
    private static let nat64LocalUse: UInt64 = 0x0064_FF9B_0001
}
