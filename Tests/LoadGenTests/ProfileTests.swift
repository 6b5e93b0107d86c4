import XCTest
@testable import LoadGen

final class ProfileTests: XCTestCase {
    func shape(_ p: TrafficProfile, streams: Int = 10, rate: Double = 1000, size: Int = 200,
               bitrate: Int = TrafficProfile.defaultVideoBitrate, tos: UInt8? = nil) -> TrafficShape {
        TrafficShape(profile: p, streams: streams, rate: rate, size: size, bitrate: bitrate, tos: tos)
    }

    func testVoice() {
        let s = shape(.voice, streams: 2000)
        XCTAssertEqual(s.datagramsPerSecond, 100_000)
        XCTAssertEqual(s.datagramsPerTick, 1)
        XCTAssertEqual(s.size(stream: 3, sequence: 7), 160)
        XCTAssertEqual(s.tos, 46 << 2 | 2, "EF with ECT(0)")
    }

    func testGameSizesAreDeterministicAndCoverTheRange() {
        let s = shape(.game, streams: 5)
        XCTAssertEqual(s.datagramsPerSecond, 300)
        XCTAssertEqual(s.tos, 18 << 2 | 2)
        var seen = Set<Int>()
        for seq in 0..<20_000 as Range<UInt64> {
            let size = s.size(stream: 1, sequence: seq)
            XCTAssertTrue((80...400).contains(size), "size \(size) out of 80...400")
            XCTAssertEqual(size, s.size(stream: 1, sequence: seq), "same input, same size")
            seen.insert(size)
        }
        XCTAssertGreaterThan(seen.count, 300, "sizes spread over the range")
        XCTAssertEqual(s.maxSize, 400)
        XCTAssertNotEqual((0..<32).map { s.size(stream: 1, sequence: $0) }, (0..<32).map { s.size(stream: 2, sequence: $0) })
    }

    func testVideoFramesCarryTheBitrate() {
        let s = shape(.video, streams: 2)
        // 2 Mbit/s / 8 / 30 frames = 8333 B a frame = 7 datagrams of 1200 B.
        XCTAssertEqual(s.datagramsPerTick, 7)
        XCTAssertEqual(s.ticksPerSecond, 60)
        XCTAssertEqual(s.datagramsPerSecond, 420)
        XCTAssertEqual(s.size(stream: 0, sequence: 0), 1200)
        XCTAssertEqual(s.tos, 34 << 2 | 2)
        XCTAssertEqual(shape(.video, streams: 1, bitrate: 1_000_000).datagramsPerTick, 4)
    }

    func testConstantUsesRateSizeAndTOS() {
        let s = shape(.constant, streams: 20, rate: 200_000, size: 200)
        XCTAssertEqual(s.datagramsPerSecond, 200_000)
        XCTAssertEqual(s.size(stream: 0, sequence: 9), 200)
        XCTAssertEqual(s.tos, 0)
        XCTAssertEqual(shape(.constant, tos: 0xB9).tos, 0xB9)
        XCTAssertEqual(shape(.voice, tos: 1).tos, 1, "--tos overrides a profile")
    }

    func testHelpDocumentsEachProfileNumber() {
        for needle in ["50 datagrams/s per stream of 160 B, DSCP EF (46)", "60 datagrams/s per stream, 80...400 B",
                       "DSCP AF21 (18)", "30 frames/s per stream", "1200 B", "DSCP AF41 (34)", "[2000000]",
                       "TOTAL offered datagrams/s", "same host"] {
            XCTAssertTrue(helpText.contains(needle), "help lacks \(needle)")
        }
    }
}
