import ClientSockets
/// Where a run reads the forwarder's figures: the relay's GET /v1/stats, or the C reference
/// forwarder's counters file and CPU clock (`ReferenceStats`), in the same form.
package enum StatsSource: Sendable {
    case relay(RelayControl)
    case reference(ReferenceStats)

    package func read() throws(LoadError) -> RelayStats {
        switch self {
        case .relay(let control): try control.stats()
        case .reference(let reference): try reference.read()
        }
    }
}
