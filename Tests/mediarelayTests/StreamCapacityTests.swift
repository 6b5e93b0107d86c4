import NetAddress
import RelayCore
import XCTest

@testable import mediarelay

/// TURN's connections over TCP and TLS are a capacity like the others: reported, and judged by
/// /readyz, only when the relay has stream listeners.
final class StreamCapacityTests: XCTestCase {
    private func relay(streams: Bool) -> Relay {
        var settings = RelaySettings(ports: 40000...40099)
        settings.turn = TurnSettings(authenticator: TurnAuthenticator(credentials: TurnCredentials(realm: "r", users: [("a", "b")])))
        settings.turn?.streamLimits.maxConnections = 250
        settings.turnListeners = [Endpoint(host: "127.0.0.1", port: 3478)!]
        if streams { settings.turnTLSListeners = [Endpoint(host: "127.0.0.1", port: 5349)!] }
        return Relay(settings: settings)
    }

    func testConnectionsAreACapacityOnlyWithStreamListeners() {
        let withStreams = Capacity(relay: relay(streams: true), workers: [])
        XCTAssertEqual(withStreams.resources.first { $0.name == "turn_connections" },
                       Capacity.Resource(name: "turn_connections", inUse: 0, total: 250))
        XCTAssertNil(Capacity(relay: relay(streams: false), workers: []).resources.first { $0.name == "turn_connections" })
    }
}
