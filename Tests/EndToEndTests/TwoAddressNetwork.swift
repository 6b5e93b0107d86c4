import Foundation
import Glibc
import TestSupport

/// Two network namespaces joined by a veth pair: a relay's host with two addresses of each
/// family on its one interface, and a clients' host with one. The real case of a relay bound to
/// a wildcard address on a host with several addresses (a floating or reserved IP beside the
/// interface's own): the kernel's route back to a client names one of the two as its source
/// (`preferred`), so an answer that should come from the other shows where it really comes from.
/// Made with `ip`, removed with the namespaces on `remove()`.
final class TwoAddressNetwork {
    /// One family's addresses: the relay host's two and the clients' host's one, and the prefix
    /// they share (for `--turn-allowed-peer`: the clients' host is a private address).
    struct Family {
        let preferred: String
        let other: String
        let client: String
        let subnet: String
        /// `host` as a command line writes it beside a port.
        static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
    }

    /// The IPv6 addresses are there only where the host has IPv6 (`IPv6Loopback`).
    let relayHost: NetworkNamespace
    let clientHost: NetworkNamespace
    private(set) var ipv4 = Family(preferred: "", other: "", client: "10.113.0.10", subnet: "10.113.0.0/24")
    private(set) var ipv6 = Family(preferred: "", other: "", client: "fd00:113::10", subnet: "fd00:113::/64")

    init() throws {
        let id = getpid()
        let namespaces = try NetworkNamespace.make("pktinfo-\(id)-r", "pktinfo-\(id)-c")
        (relayHost, clientHost) = (namespaces[0], namespaces[1])
        do {
            try build(relayDevice: "pkr\(id % 100_000)", clientDevice: "pkc\(id % 100_000)")
        } catch {
            remove()
            throw error
        }
    }

    func remove() {
        relayHost.remove()
        clientHost.remove()
    }

    private func build(relayDevice: String, clientDevice: String) throws {
        try Command.check(["ip", "link", "add", relayDevice, "netns", relayHost.name, "type", "veth",
                                    "peer", "name", clientDevice, "netns", clientHost.name])
        for address in ["10.113.0.1/24", "10.113.0.2/24"] { try relayHost.run(["addr", "add", address, "dev", relayDevice]) }
        try clientHost.run(["addr", "add", "10.113.0.10/24", "dev", clientDevice])
        if IPv6Loopback.isAvailable {
            // nodad: an IPv6 address is usable at once instead of after duplicate detection.
            for address in ["fd00:113::1/64", "fd00:113::2/64"] { try relayHost.run(["addr", "add", address, "dev", relayDevice, "nodad"]) }
            try clientHost.run(["addr", "add", "fd00:113::10/64", "dev", clientDevice, "nodad"])
        }
        try relayHost.run(["link", "set", relayDevice, "up"])
        try clientHost.run(["link", "set", clientDevice, "up"])
        ipv4 = try family(ipv4, pair: ("10.113.0.1", "10.113.0.2"))
        if IPv6Loopback.isAvailable { ipv6 = try family(ipv6, pair: ("fd00:113::1", "fd00:113::2")) }
    }

    /// Which of the pair the relay host's route to the client names as the source, asked of
    /// the kernel (`ip route get`), so the test does not depend on its address selection rules.
    private func family(_ family: Family, pair: (String, String)) throws -> Family {
        let route = try relayHost.run(["route", "get", family.client])
        let words = route.split(whereSeparator: \.isWhitespace).map(String.init)
        guard let index = words.firstIndex(of: "src"), index + 1 < words.count, [pair.0, pair.1].contains(words[index + 1]) else {
            throw Command.Failure(step: "ip route get \(family.client) in \(relayHost.name)", output: route)
        }
        let preferred = words[index + 1]
        return Family(preferred: preferred, other: preferred == pair.0 ? pair.1 : pair.0, client: family.client, subnet: family.subnet)
    }
}
