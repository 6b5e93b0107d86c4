import Synchronization

/// The connections one server counts against `HTTPLimits.maxConnections`: written by its serving
/// thread at the end of each turn, read from any thread. A class because the atomic needs an
/// address that both the server and its serve loop hold, and the loop must not hold the server.
final class ConnectionCount: Sendable {
    let value = Atomic<Int>(0)
}
