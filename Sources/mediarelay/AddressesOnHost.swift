import NetAddress

extension ServerOptions {
    /// The first address the relay binds at start that this host does not have (`host`: its
    /// interfaces' addresses), as the one line that stops start-up; nil when every one is here,
    /// or with --free-bind on, where such an address is bound anyway and arrives later.
    ///
    /// Without this check an address that is not here passed start-up unseen when it was only
    /// --relay-address (sessions and relayed sockets bind it later): /readyz said 200 and every
    /// Allocate was refused with 508. Wildcards and 127.0.0.0/8 (the loopback route takes all
    /// of it, though an interface lists only 127.0.0.1) are always here.
    func addressNotOnHost(_ host: [Endpoint]) -> OptionError? {
        guard !freeBind else { return nil }
        var bound: [(subject: String, host: String)] = [("--relay-address \(relayAddress)", relayAddress)]
        bound += turnListeners.map { ("--turn \($0)", $0.host) } + turnTCPListeners.map { ("--turn-tcp \($0)", $0.host) }
            + turnTLSListeners.map { ("--turn-tls \($0)", $0.host) } + forwards.map { ("--forward \($0)", $0.listen.host) }
        for (subject, text) in bound {
            guard let address = Endpoint(host: text, port: 0), !address.isWildcard, !(address.isIPv4 && address.isLoopback),
                  !host.contains(where: { $0.high == address.high && $0.low == address.low }) else { continue }
            let known = Array(Set(host.filter { !$0.isWildcard }.map(\.hostText))).sorted().prefix(8).joined(separator: ", ")
            return OptionError(
                subject: subject,
                problem: "\(text) is not an address of this host (it has \(known.isEmpty ? "none" : known)); give one of "
                    + "those or a wildcard, or --free-bind on if it is a floating address that arrives later"
            )
        }
        return nil
    }
}
