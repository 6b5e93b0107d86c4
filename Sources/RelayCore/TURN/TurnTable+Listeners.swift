import DatagramEngine
import NetAddress
import STUN
import SystemSupport

/// TURN's listeners, opened by the table that owns what arrives on them (as forward rules open
/// theirs): every worker binds each address with SO_REUSEPORT, so the kernel keeps a client's
/// 5-tuple on one worker.
extension TurnTable {
    /// Opens this worker's UDP, TCP and TLS listeners; returns the UDP listeners' bound
    /// addresses (a port 0 asked for is a port now). TLS needs `shared.tlsContext` set.
    @discardableResult
    func openListeners(udp: [Endpoint], tcp: [Endpoint] = [], tls: [Endpoint] = [],
                       options: SocketOptions = SocketOptions()) throws(SystemCallError) -> [Endpoint] {
        var options = options
        options.reusePort = true
        var bound: [Endpoint] = []
        for address in udp {
            let opened = try engine.openDatagramSocket(binding: address, options: options, owner: OwnerTag(.turnListener), dontFragment: nil)
            listenerAddresses[opened.socket.slot] = opened.local
            bound.append(opened.local)
        }
        let streamListeners = tcp.map { ($0, TurnTransport.tcp) } + tls.map { ($0, TurnTransport.tls) }
        for (address, transport) in streamListeners {
            try engine.openStreamListener(binding: address, freeBind: options.freeBind, owner: .turnStreamListener(transport))
        }
        return bound
    }
}

extension OwnerTag {
    /// The tag of a TURN stream listener: its transport (TCP or TLS) in the index half. Read
    /// back by `turnStreamTransport`; nowhere else knows the encoding.
    static func turnStreamListener(_ transport: TurnTransport) -> OwnerTag {
        OwnerTag(.turnStreamListener, Int32(transport.rawValue))
    }

    /// The transport of the TURN stream listener with this tag.
    var turnStreamTransport: TurnTransport {
        TurnTransport(rawValue: Int(index)) == .tls ? .tls : .tcp
    }
}
