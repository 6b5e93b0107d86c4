import DatagramEngine
import SystemSupport
import Glibc

/// Binds relay sockets on ports from the relay's pool and registers them with one worker's
/// engine: the session table's legs and the forward-rule table's upstream sockets.
struct PortOpener {
    let engine: DatagramEngine
    let ports: PortPool
    let socketOptions: SocketOptions

    /// Binds a socket on a port from the relay's range, or with `pair` two: an even port and the
    /// odd one after it. A port some other process holds is skipped (and returned to the pool
    /// later), a few times before giving up.
    func open(near address: Endpoint, for purpose: PortPool.Purpose = .session, pair: Bool = false)
        -> Result<[(SocketID, UInt16)], RelayError> {
        var skipped: [UInt16] = []
        defer { for port in skipped { ports.release(port, from: purpose) } }
        for _ in 0..<16 {
            guard let base = pair ? ports.acquirePair() : ports.acquire(for: purpose) else {
                return .failure(.portsExhausted)
            }
            let wanted = pair ? [base, base + 1] : [base]
            var opened: [(SocketID, UInt16)] = []
            do throws(SystemCallError) {
                for port in wanted {
                    var local = address
                    local.port = port
                    let socket = try UDPSocket(binding: local, options: socketOptions)
                    opened.append((try engine.register(socket), port))
                }
                return .success(opened)
            } catch {
                engine.unregister(opened.map(\.0))
                guard error.errno == EADDRINUSE else {
                    for port in wanted { ports.release(port, from: purpose) }
                    return .failure(.socket("\(error)"))
                }
                skipped += wanted
            }
        }
        return .failure(.portsExhausted)
    }
}
