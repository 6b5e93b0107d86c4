@testable import LoadComparison
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

    func testLoadLabels() {
        XCTAssertEqual(LoadPoint.named("50kx200"), LoadPoint.constant(50_000, streams: 200))
        XCTAssertEqual(LoadPoint.named("50kx200")?.label, "50kx200")
        XCTAssertEqual(LoadPoint.named("50kx20"), LoadPoint.constant(50_000), "20 streams is the plain label")
        XCTAssertEqual(LoadPoint.named("50kx20")?.label, "50k")
        XCTAssertEqual(LoadPoint.named("1kx10000")?.streams, 10_000)
        XCTAssertEqual(LoadPoint.named("2000k")?.rate, 2_000_000)
        XCTAssertEqual(LoadPoint.named("voice2000"), LoadPoint.standard[5])
        XCTAssertEqual(LoadPoint.named("video7")?.streams, 7)
        for bad in ["", "k", "50", "50kx", "50kx0", "x20", "50kx-1", "+50k", "voice", "voice+3", "video0", "voice10x5", "50kx1e3"] {
            XCTAssertNil(LoadPoint.named(bad), bad)
        }
    }
}
