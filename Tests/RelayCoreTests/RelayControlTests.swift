import DatagramEngine
import NetAddress
import RelayCore
import XCTest

/// The control plane tells "not there" from "its worker did not answer": a silent worker's
/// sessions are never forgotten as if they had gone.
final class RelayControlTests: XCTestCase {
    func testASilentWorkerIsAnErrorNotAnAbsence() throws {
        // Workers never started: every question to them goes unanswered.
        let relay = Relay(settings: RelaySettings(ports: 44100...44199), replyTimeout: .milliseconds(100))
        guard case .failure(.workerUnresponsive) = relay.createSession(SessionRequest()) else {
            return XCTFail("a create nobody answered is an error")
        }
        XCTAssertEqual(relay.sessionCount, 0, "and it holds no place under the cap")
        guard case .failure(.workerUnresponsive) = relay.sessions() else { return XCTFail("listing needs every worker") }
        guard case .success(nil) = relay.session("s-0000000000000000") else { return XCTFail("unknown id is simply absent") }
        guard case .success(false) = relay.deleteSession("s-0000000000000000") else { return XCTFail() }
    }

    func testStartedRelayAnswersAndForgetsOnlyWhatIsGone() throws {
        let relay = Relay(settings: RelaySettings(ports: 44200...44299, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!))
        _ = try relay.start()
        defer { relay.stop() }
        guard case .success(let info) = relay.createSession(SessionRequest()) else { return XCTFail("create") }
        guard case .success(let found?) = relay.session(info.id) else { return XCTFail("describe") }
        XCTAssertEqual(found.legs.count, 2)
        guard case .success(let all) = relay.sessions() else { return XCTFail("list") }
        XCTAssertEqual(all.map(\.id), [info.id])
        guard case .success(true) = relay.deleteSession(info.id) else { return XCTFail("delete") }
        guard case .success(nil) = relay.session(info.id) else { return XCTFail("gone") }
    }
}
