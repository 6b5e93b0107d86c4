import Foundation
@testable import mediarelay
import NetAddress
import RelayCore
import XCTest

/// Log lines in both formats (`--log-format`), and the accounting line's fields: order, values,
/// escaping of what a client chose (a TURN user name), and JSON that parses.
final class LogLineTests: XCTestCase {
    private let time: UInt64 = 1_764_311_670_123_456_789  // 2025-11-28T06:34:30.123Z

    private func text(_ message: String, _ fields: [LogField] = [], level: String = "info") -> String {
        String(decoding: LogLine.render(.text, level: level, message: message, fields: fields, timeNanoseconds: time), as: UTF8.self)
    }

    private func json(_ message: String, _ fields: [LogField] = [], level: String = "info") -> String {
        String(decoding: LogLine.render(.json, level: level, message: message, fields: fields, timeNanoseconds: time), as: UTF8.self)
    }

    private func object(_ line: String, file: StaticString = #filePath, line number: UInt = #line) -> [String: Any] {
        XCTAssertTrue(line.hasSuffix("}\n"), line, file: file, line: number)
        XCTAssertEqual(line.filter { $0 == "\n" }.count, 1, "one line: \(line)", file: file, line: number)
        let parsed = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        XCTAssertNotNil(parsed, "not a JSON object: \(line)", file: file, line: number)
        return parsed ?? [:]
    }

    func testTimeIsRFC3339UTCWithMilliseconds() {
        XCTAssertEqual(LogLine.rfc3339(0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(LogLine.rfc3339(time), "2025-11-28T06:34:30.123Z")
        XCTAssertEqual(LogLine.rfc3339(1_709_210_096_007_000_000), "2024-02-29T12:34:56.007Z")
    }

    func testTextKeepsTheMessageAndAddsFieldsInOrder() {
        XCTAssertEqual(text("http listening on 127.0.0.1:8080"), "mediarelay[info] http listening on 127.0.0.1:8080\n")
        let fields = [LogField("b", .integer(2)), LogField("a", .text("x")), LogField("ecn", .integers([1, 0, 3, 4])),
                      LogField("drops", .counts([LogCount(name: "rate_limit", count: 3), LogCount(name: "egress", count: 1)]))]
        XCTAssertEqual(text("accounting", fields, level: "warning"),
                       "mediarelay[warning] accounting b=2 a=x ecn=1,0,3,4 drops=rate_limit:3,egress:1\n")
    }

    func testTextQuotesValuesThatWouldBreakTheLine() {
        let fields = [LogField("user", .text("a b")), LogField("empty", .text("")), LogField("eq", .text("k=v")),
                      LogField("quote", .text(#"say "hi""#)), LogField("newline", .text("x\nmediarelay[info] forged kind=session")),
                      LogField("slash", .text(#"a\b"#)), LogField("bell", .text("\u{7}")), LogField("utf8", .text("José")),
                      LogField("drops", .counts([]))]
        XCTAssertEqual(text("m", fields),
                       #"mediarelay[info] m user="a b" empty="" eq="k=v" quote="say \"hi\"" "#
                       + #"newline="x\nmediarelay[info] forged kind=session" slash="a\\b" bell="\u0007" utf8=José drops="""#
                       + "\n")
    }

    func testJSONIsOneObjectWithTimeLevelMessageThenFields() throws {
        let fields = [LogField("user", .text("al\"ice\n\u{1}")), LogField("n", .integer(UInt64.max)),
                      LogField("ecn", .integers([0, 1, 2, 3])), LogField("drops", .counts([LogCount(name: "hijack", count: 2)])),
                      LogField("none", .counts([]))]
        let line = json("accounting", fields)
        XCTAssertTrue(line.hasPrefix(#"{"time":"2025-11-28T06:34:30.123Z","level":"info","msg":"accounting","user":"al\"ice\n\u0001","#),
                      line)
        let parsed = object(line)
        XCTAssertEqual(parsed["user"] as? String, "al\"ice\n\u{1}")
        XCTAssertEqual((parsed["n"] as? NSNumber)?.uint64Value, UInt64.max)
        XCTAssertEqual(parsed["ecn"] as? [Int], [0, 1, 2, 3])
        XCTAssertEqual(parsed["drops"] as? [String: Int], ["hijack": 2])
        XCTAssertEqual(parsed["none"] as? [String: Int], [:])
        XCTAssertEqual(object(json("said \"x\" \\ \t")) ["msg"] as? String, "said \"x\" \\ \t")
    }

    /// An allocation's record as a worker builds it: every field by name, in the documented order.
    func testAccountingFieldsOfAnAllocation() throws {
        var client = AccountingSide(name: "client", remote: Endpoint(host: "192.0.2.7", port: 50000), local: [])
        client.packetsIn = 10
        client.bytesIn = 1000
        client.ecnIn = [4, 3, 2, 1]
        client.packetsOut = 5
        client.bytesOut = 500
        client.ecnOut = [5, 0, 0, 0]
        var peers = AccountingSide(name: "peers", remote: nil,
                                   local: [Endpoint(host: "203.0.113.1", port: 49160)!, Endpoint(host: "2001:db8::1", port: 49161)!])
        peers.packetsIn = 5
        peers.ecnOut = [4, 3, 1, 2]
        let record = AccountingRecord(kind: .allocation, id: "bob smith", transport: .tls, startNanoseconds: time,
                                      durationNanoseconds: 61_234_999_999, sides: [client, peers], ceMarked: 1,
                                      drops: [(reason: "no_permission", count: 2)], reason: .connectionClosed)
        let fields = AccountingLine.fields(record)
        XCTAssertEqual(fields.map(\.key), [
            "kind", "user", "transport", "reason", "start", "duration_ms",
            "client", "client_packets_in", "client_bytes_in", "client_ecn_in", "client_packets_out", "client_bytes_out",
            "client_ecn_out",
            "peers_local", "peers_packets_in", "peers_bytes_in", "peers_ecn_in", "peers_packets_out", "peers_bytes_out",
            "peers_ecn_out", "ce_marked", "drops",
        ])
        XCTAssertEqual(text(AccountingLine.message, fields),
                       #"mediarelay[info] accounting kind=allocation user="bob smith" transport=tls reason=connection_closed "#
                       + "start=2025-11-28T06:34:30.123Z duration_ms=61234 client=192.0.2.7:50000 client_packets_in=10 "
                       + "client_bytes_in=1000 client_ecn_in=4,3,2,1 client_packets_out=5 client_bytes_out=500 client_ecn_out=5,0,0,0 "
                       + "peers_local=203.0.113.1:49160,[2001:db8::1]:49161 peers_packets_in=5 peers_bytes_in=0 peers_ecn_in=0,0,0,0 "
                       + "peers_packets_out=0 peers_bytes_out=0 peers_ecn_out=4,3,1,2 ce_marked=1 drops=no_permission:2\n")
        let parsed = object(json(AccountingLine.message, fields))
        XCTAssertEqual(parsed["kind"] as? String, "allocation")
        XCTAssertEqual(parsed["user"] as? String, "bob smith")
        XCTAssertEqual(parsed["duration_ms"] as? Int, 61234)
        XCTAssertEqual(parsed["peers_local"] as? String, "203.0.113.1:49160,[2001:db8::1]:49161")
        XCTAssertEqual(parsed["client_ecn_in"] as? [Int], [4, 3, 2, 1])
        XCTAssertEqual(parsed["drops"] as? [String: Int], ["no_permission": 2])
    }

    func testAccountingNamesTheEntryByItsKind() {
        for (kind, key) in [(AccountingKind.allocation, "user"), (.session, "session"), (.forwardClient, "rule")] {
            let record = AccountingRecord(kind: kind, id: "x", transport: .udp, startNanoseconds: 0, durationNanoseconds: 0,
                                          sides: [], ceMarked: 0, drops: [], reason: .shutdown)
            XCTAssertEqual(AccountingLine.fields(record).map(\.key),
                           ["kind", key, "transport", "reason", "start", "duration_ms", "ce_marked", "drops"])
        }
    }
}
