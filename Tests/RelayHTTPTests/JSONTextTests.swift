import Foundation
import XCTest
@testable import RelayHTTP

/// The API's JSON writer: what it writes must read back, through Foundation's own parser, as
/// exactly what was given, and what JSON cannot carry must come back as nil (a 500), never as
/// invalid text.
final class JSONTextTests: XCTestCase {
    private func text(_ object: [String: Any]) -> String? { JSONText.encode(object).map { String(decoding: $0, as: UTF8.self) } }

    func testCompactWithKeysInCodePointOrder() {
        XCTAssertEqual(text([:]), "{}")
        XCTAssertEqual(text(["b": 1, "a": [true, false], "B": [] as [Any], "_x": [:] as [String: Any]]),
                       #"{"B":[],"_x":{},"a":[true,false],"b":1}"#)
        XCTAssertEqual(text(["outer": ["z": 1, "y": ["x": "w"]] as [String: Any]]), #"{"outer":{"y":{"x":"w"},"z":1}}"#)
    }

    func testStringsAreEscapedAsRFC8259AsksAndNothingMore() {
        XCTAssertEqual(text(["s": "\"\\\n\r\t\u{1}\u{1F}\u{7F}/é🙂"]), #"{"s":"\"\\\n\r\t\u0001\u001f"# + "\u{7F}/é🙂\"}")
        XCTAssertEqual(text(["k\"ey": "HTTP/1.1"]), #"{"k\"ey":"HTTP/1.1"}"#)
    }

    func testNumbersOfEveryWidthAndWholeDoublesWithoutAFraction() {
        XCTAssertEqual(text(["a": UInt64.max, "b": Int64.min, "c": Int32(-7), "d": UInt16(443), "e": UInt8(0)]),
                       #"{"a":18446744073709551615,"b":-9223372036854775808,"c":-7,"d":443,"e":0}"#)
        XCTAssertEqual(text(["a": 2.0, "b": 1.5, "c": 0.1, "d": -0.0, "e": Float(0.25), "f": 1e20]),
                       #"{"a":2,"b":1.5,"c":0.1,"d":0,"e":0.25,"f":1e+20}"#)
    }

    func testNullAndTheNumbersFoundationParses() throws {
        let parsed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(#"{"t": true, "f": false, "n": 3, "d": 2.5, "z": null}"#.utf8)) as? [String: Any])
        XCTAssertEqual(text(parsed), #"{"d":2.5,"f":false,"n":3,"t":true,"z":null}"#)
    }

    func testWhatJSONCannotCarryIsRefused() {
        XCTAssertNil(JSONText.encode(["x": Double.nan]))
        XCTAssertNil(JSONText.encode(["x": [1, Double.infinity] as [Any]]))
        XCTAssertNil(JSONText.encode(["x": Float.nan]))
        XCTAssertNil(JSONText.encode(["x": Date()]))
        XCTAssertNil(JSONText.encode(["x": ["y": URL(fileURLWithPath: "/")] as [String: Any]]))
        var deep: [String: Any] = ["leaf": 1]
        for _ in 0..<JSONText.maximumDepth { deep = ["d": deep] }
        XCTAssertNil(JSONText.encode(deep), "nesting beyond the bound")
    }

    func testWhatItWritesReadsBackAsWhatWasGiven() throws {
        let object: [String: Any] = [
            "counters": ["packets_in": 123_456_789, "bytes": UInt64(1) << 40, "ratio": 0.3333333333333333],
            "sessions": [["id": "a/b", "latched": NSNull(), "ok": true], ["id": "ü\u{0}x", "legs": [1, 2, 3]]],
            "name": "relay \"one\"\n",
        ]
        let bytes = try XCTUnwrap(JSONText.encode(object))
        let back = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary)
        XCTAssertEqual(back, object as NSDictionary)
    }
}
