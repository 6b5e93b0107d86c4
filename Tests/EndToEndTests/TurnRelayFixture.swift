import Foundation
import NetAddress
import STUN
import TestPorts

/// The real relay with one TURN listener over UDP on 127.0.0.1 (a free port), a static user, a
/// REST secret and the test's arguments, for tests that write their requests themselves
/// (`TurnWireClient`) and read what the relay logs.
struct TurnRelayFixture {
    static let realm = "log.test"
    static let user = "alice"
    static let password = "secret"
    static let secret = "rest-secret"

    let relay: RelayProcess
    let listener: Endpoint

    /// `credentials`: the static user and the REST secret as flags; without, the test gives its own.
    init(_ arguments: [String], environment: [String: String] = [:], credentials: Bool = true) throws {
        // A free port, released for the relay to bind (as TurnServerFixture finds its listeners).
        let port = try IndependentPeer(host: "127.0.0.1").port
        listener = Endpoint(host: "127.0.0.1", port: port)!
        let given = credentials ? ["--turn-user", "\(Self.user):\(Self.password)", "--turn-secret", Self.secret] : []
        relay = try RelayProcess(ports: PortBlock(count: 20), ["--turn", "127.0.0.1:\(port)", "--turn-realm", Self.realm,
                                                               "--turn-allowed-peer", "127.0.0.1/32"] + given + arguments,
                                 environment: environment)
    }

    /// A client on `host` (any port) that has learned the realm and a nonce from a 401.
    func client(host: String = "127.0.0.1", username: String = TurnRelayFixture.user,
                password: String = TurnRelayFixture.password) throws -> TurnWireClient {
        let client = try TurnWireClient(server: listener, host: host, username: username, password: password)
        try client.learnChallenge()
        return client
    }

    /// A REST user name valid for `seconds` from now (negative: expired) and its password.
    static func restCredential(_ user: String, seconds: Int, secret: String = TurnRelayFixture.secret) -> (username: String, password: String) {
        let username = "\(Int(time(nil)) + seconds):\(user)"
        return (username, LongTermKey.restPassword(secret: Array(secret.utf8), username: username))
    }
}
