import XCTest
@testable import LoadGen

/// The settings `compare` runs: each relay engine's C counterpart, and the loads by label.
final class ComparisonPlanTests: XCTestCase {
    /// Each C reference runs the backend of the relay row it is compared with, GSO and GRO
    /// included: the relay's mmsg and uring rows run with --gso off --gro off, uring+gso with
    /// --gso on --gro off.
    func testEachCReferenceRunsItsRelayEnginesBackend() {
        let backends = Dictionary(uniqueKeysWithValues: EngineSetting.references.map { ($0.name, $0.value(of: "--backend") ?? "?") })
        XCTAssertEqual(backends, ["c-perpacket": "perpacket", "c-mmsg": "mmsg", "c-uring": "uring", "c-uring+gso": "uring+gso",
                                  "c-mmsg+gso": "mmsg+gso", "c-mmsg+gso+gro": "mmsg+gso+gro"])
        for reference in EngineSetting.references {
            XCTAssertTrue(reference.reference)
            XCTAssertEqual(reference.counterpart.map { "c-" + $0 }, reference.name)
            let relay = (EngineSetting.all + EngineSetting.videoGRO).first { $0.name == reference.counterpart }
            XCTAssertEqual(reference.profiles, relay?.profiles, "\(reference.name) runs at its relay engine's loads")
        }
        XCTAssertEqual(EngineSetting.cPerPacket.arguments, ["--backend", "perpacket"])
        XCTAssertEqual(EngineSetting.references.map(\.reportedReferenceName),
                       ["c-perpacket", "c-mmsg", "c-uring", "c-uring", "c-mmsg", "c-mmsg"], "as the relay reports uring for uring+gso")
    }
}
