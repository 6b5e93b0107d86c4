@testable import mediarelay
import RelayCore
import RelayHTTP
import STUN
import XCTest

/// TURN's figures appear in /v1/stats and /metrics under the names the dashboard uses.
final class TurnStatsReportTests: XCTestCase {
    func testJSONAndPrometheusCarryTheTurnFigures() throws {
        var stats = TurnStats()
        stats.allocations = 3
        stats.channels = 2
        stats.counters.allocationsCreated = 5
        stats.counters.refused[86] = 4  // 486
        stats.counters.authFailures[AuthFailure.staleNonce.rawValue] = 6
        stats.counters.channelDataToPeers = 7
        stats.counters.bytesToClients = 800
        stats.counters.channelsRefused = 9
        stats.counters.drops[TurnDropReason.unauthenticatedRate.rawValue] = 11
        stats.counters.redirects[TurnRedirectReason.draining.rawValue] = 12

        let json = TurnStatsReport.json(stats)
        XCTAssertEqual(json["allocations"] as? Int, 3)
        XCTAssertEqual(json["allocations_created"] as? UInt64, 5)
        XCTAssertEqual((json["allocations_refused"] as? [String: Any])?["486"] as? UInt64, 4)
        XCTAssertEqual((json["auth_failures"] as? [String: Any])?["stale_nonce"] as? UInt64, 6)
        XCTAssertEqual(json["channel_data_to_peers"] as? UInt64, 7)
        XCTAssertEqual(json["channels_refused"] as? UInt64, 9)
        XCTAssertEqual((json["drops"] as? [String: Any])?["unauthenticated_rate"] as? UInt64, 11)
        XCTAssertEqual((json["redirects"] as? [String: Any])?["draining"] as? UInt64, 12)
        XCTAssertEqual((json["redirects"] as? [String: Any])?["capacity"] as? UInt64, 0)

        var text = PrometheusText()
        TurnStatsReport.prometheus(stats, worker: 1, into: &text)
        let rendered = text.text
        XCTAssertTrue(rendered.contains("mediarelay_turn_allocations{worker=\"1\"} 3"), rendered)
        XCTAssertTrue(rendered.contains("mediarelay_turn_allocations_refused_total{worker=\"1\",code=\"486\"} 4"))
        XCTAssertTrue(rendered.contains("mediarelay_turn_auth_failures_total{worker=\"1\",reason=\"stale_nonce\"} 6"))
        XCTAssertTrue(rendered.contains(
            "mediarelay_turn_datagrams_total{worker=\"1\",framing=\"channel_data\",direction=\"to_peer\"} 7"))
        XCTAssertTrue(rendered.contains("mediarelay_turn_bytes_total{worker=\"1\",direction=\"to_client\"} 800"))
        XCTAssertTrue(rendered.contains("mediarelay_turn_channels_refused_total{worker=\"1\"} 9"), rendered)
        XCTAssertTrue(rendered.contains("mediarelay_turn_drops_total{worker=\"1\",reason=\"unauthenticated_rate\"} 11"))
        XCTAssertTrue(rendered.contains("mediarelay_turn_redirects_total{worker=\"1\",reason=\"draining\"} 12"), rendered)
        XCTAssertTrue(rendered.contains("mediarelay_turn_redirects_total{worker=\"1\",reason=\"ports\"} 0"), rendered)
    }
}
