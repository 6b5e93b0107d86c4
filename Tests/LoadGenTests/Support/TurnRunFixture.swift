@testable import LoadGen
@testable import TurnClientKit

/// The options every TURN test run against coturn starts from: 4 clients for a second, no
/// progress lines, and a long drain, since a loaded CI machine may hold a datagram in coturn
/// for a while (the run ends as soon as everything sent has arrived).
enum TurnRunFixture {
    static func options(server: String, credential: TurnCredential) -> LoadOptions {
        var o = LoadOptions()
        o.turn = server
        o.turnCredential = credential
        o.streams = 4
        o.seconds = 1
        o.warmup = 0.2
        o.progress = false
        o.drain = 5
        return o
    }
}
