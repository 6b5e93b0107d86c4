import DatagramEngine

/// What a socket is to its worker: the role half of the owner tag the table that opened it
/// gives the engine (`OwnerTag`), the index half naming the table's entry. The worker
/// dispatches each datagram on the tag it arrives with, with no table of its own to keep in
/// step with the engine's.
enum SocketRole: UInt8 {
    /// Never dispatched: a socket being closed (`DatagramEngine.disown`), or not yet given out.
    case unowned = 0
    /// A forward rule's listener; the index is the rule's.
    case listener
    /// A forward-rule client's upstream socket; the index is the client's.
    case upstream
    /// A session leg; the index is the leg's.
    case leg
    /// A TURN listener: ChannelData, Send indications and requests from clients.
    case turnListener
    /// The relayed socket of the TURN allocation with this index: datagrams from peers.
    case turnRelay
    /// A TURN listener over TCP or TLS (the transport in the index: `OwnerTag.turnStreamListener`):
    /// accepted connections.
    case turnStreamListener
    /// A TURN client's TCP or TLS connection; the index is its entry in `TurnStreamClients`.
    case turnConnection
}

extension OwnerTag {
    init(_ role: SocketRole, _ index: Int32 = 0) { self.init(role: role.rawValue, index: index) }

    var socketRole: SocketRole { SocketRole(rawValue: role) ?? .unowned }
}
