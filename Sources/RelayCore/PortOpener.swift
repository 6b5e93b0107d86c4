import DatagramEngine
import NetAddress
import SystemSupport
import Glibc

/// Binds relay sockets on ports from the relay's pool and registers them with one worker's
/// engine: the session table's legs and the forward-rule table's upstream sockets.
struct PortOpener<Engine: TableEngine> {
    let engine: Engine
    let ports: PortPool
    let socketOptions: SocketOptions

    /// Binds a socket on a port from the relay's range, or with `pair` two: an even port and the
    /// odd one after it. A port some other process holds is skipped (and returned to the pool
    /// later), a few times before giving up.
    func open(near address: Endpoint, for purpose: PortPool.Purpose = .session, pair: Bool = false)
        -> Result<[(SocketID, UInt16)], RelayError> {
        let result = ports.bindSkippingHeld(for: purpose, width: pair ? 2 : 1,
                                            take: { pair ? ports.acquirePair() : ports.acquire(for: purpose) }) {
            (base: UInt16) throws(SystemCallError) -> [(SocketID, UInt16)] in
            var opened: [(SocketID, UInt16)] = []
            do throws(SystemCallError) {
                for port in pair ? [base, base + 1] : [base] {
                    var local = address
                    local.port = port
                    let socket = try engine.openDatagramSocket(binding: local, options: socketOptions, owner: .unowned, dontFragment: nil)
                    opened.append((socket.socket, port))
                }
                return opened
            } catch {
                engine.unregister(opened.map(\.0))
                throw error
            }
        }
        switch result {
        case .success(let opened): return .success(opened)
        case .failure(.exhausted): return .failure(.portsExhausted)
        case .failure(.failed(let error)): return .failure(.socket("\(error)"))
        }
    }
}
