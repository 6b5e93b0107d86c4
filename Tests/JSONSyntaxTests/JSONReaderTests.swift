import JSONSyntax
import XCTest

/// `JSONValue(parsing:)`: what it reads, and every kind of bad input refused with a line,
/// a column and a problem in words, never a trap.
final class JSONReaderTests: XCTestCase {
    private func parse(_ text: String) throws(JSONReadError) -> JSONValue {
        try JSONValue(parsing: Array(text.utf8))
    }

    /// The refusal of `bytes` as text, or a failure when they were read.
    private func refusal(_ bytes: [UInt8], maximumDepth: Int = JSONValue.defaultMaximumDepth,
                         file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let value = try JSONValue(parsing: bytes, maximumDepth: maximumDepth)
            XCTFail("read as \(value.rendered.prefix(80))", file: file, line: line)
            return ""
        } catch {
            XCTAssertEqual(error.kind, .syntax, file: file, line: line)
            return error.description
        }
    }

    private func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        refusal(Array(text.utf8), file: file, line: line)
    }

    func testEveryKindOfValueIsRead() throws {
        let value = try parse(#" {"z": null, "t": true, "f": false, "i": -42, "d": 2.5, "e": 1e3, "s": "a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "a": [1, [], {}], "o": {"k": "v"}} "#)
        XCTAssertEqual(value.members?.map(\.0), ["z", "t", "f", "i", "d", "e", "s", "a", "o"], "members in the text's order")
        XCTAssertEqual(value["z"], .null)
        XCTAssertEqual(value["t"]?.bool, true)
        XCTAssertEqual(value["f"]?.bool, false)
        XCTAssertEqual(value["i"]?.integer, -42)
        XCTAssertNil(value["d"]?.integer, "a fraction is not an integer")
        XCTAssertEqual(value["d"]?.double, 2.5)
        XCTAssertNil(value["e"]?.integer, "an exponent is not an integer")
        XCTAssertEqual(value["e"]?.double, 1000)
        XCTAssertEqual(value["s"]?.string, "a\"\\/\u{8}\u{C}\n\r\t\u{E9}😀")
        XCTAssertEqual(value["a"]?.elements?.count, 3)
        XCTAssertEqual(value["o"]?["k"]?.string, "v")
        XCTAssertNil(value["missing"])
        XCTAssertEqual(try parse("\"x\""), .string("x"), "a bare value is a document")
        XCTAssertEqual(try JSONValue(parsing: [0xEF, 0xBB, 0xBF] + Array("{}".utf8)), .object([]), "a byte order mark is skipped")
    }

    func testWhatIsReadRendersBackTheSame() throws {
        let text = #"{"a":[1,-2.5,"x\n\u0001",true,false,null,{"b":{}}],"c":"é😀"}"#
        let value = try parse(text)
        XCTAssertEqual(value.rendered, text)
        XCTAssertEqual(try parse(value.rendered), value)
    }

    /// Every proper prefix of a document is refused, at the point the text ran out.
    func testTruncatedTextIsRefused() {
        let text = Array(#"{"name": "relay\u00e9", "list": [1, 2.5e-3, true, null], "inner": {"k": false}}"#.utf8)
        for length in 0..<text.count {
            let message = refusal(Array(text[0..<length]))
            XCTAssertTrue(message.contains("the end of the text") || message.contains("never ends") || message.contains("four hex digits")
                          || message.contains("expected a value") || message.contains("expected a digit"),
                          "\(length) bytes: \(message)")
        }
        XCTAssertEqual(refusal(""), "line 1, column 1: expected a value, found the end of the text")
        XCTAssertEqual(refusal(#"{"a": "b"#), #"line 1, column 7: a string that never ends (no closing '"')"#)
    }

    func testNestingIsBounded() throws {
        let limit = JSONValue.defaultMaximumDepth
        XCTAssertNoThrow(try parse(String(repeating: "[", count: limit) + String(repeating: "]", count: limit)))
        let deeper = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        XCTAssertEqual(refusal(deeper), "line 1, column \(limit + 1): nesting deeper than \(limit) levels")
        XCTAssertTrue(refusal(String(repeating: #"{"a":"#, count: limit + 1)).hasSuffix("nesting deeper than \(limit) levels"))
        // A million open brackets: refused at the bound, long before the stack could run out.
        XCTAssertTrue(refusal([UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)).contains("nesting deeper"))
        XCTAssertTrue(refusal(Array("[[[]]]".utf8), maximumDepth: 2).contains("nesting deeper than 2 levels"))
    }

    func testHugeNumbersAreNumbersOrRefused() throws {
        XCTAssertEqual(try parse("9223372036854775807").integer, Int64.max)
        XCTAssertEqual(try parse("-9223372036854775808").integer, Int64.min)
        XCTAssertNil(try parse("9223372036854775808").integer, "past Int64: a number, not an integer")
        XCTAssertEqual(try parse("9223372036854775808").double, 9223372036854775808)
        XCTAssertEqual(try parse("123456789012345678901234").double, 1.2345678901234568e23)
        XCTAssertEqual(try parse("1e-400").double, 0, "underflow is a finite number")
        XCTAssertEqual(refusal("1e400"), "line 1, column 1: the number 1e400 is too large")
        XCTAssertEqual(refusal("[-1E+999]"), "line 1, column 2: the number -1E+999 is too large")
        let digits = "1" + String(repeating: "0", count: 100_000)
        XCTAssertEqual(refusal(digits), "line 1, column 1: the number \(digits.prefix(40))... is too large")
    }

    func testNumbersAreSpelledAsRFC8259Says() {
        for (text, problem) in [
            ("01", "a number may not start with 0 unless it is 0"), ("-", "expected a digit, found the end of the text"),
            ("1.", "expected a digit after '.'"), (".5", "expected a value"), ("+1", "expected a value"),
            ("1e", "expected a digit in the exponent"), ("NaN", "expected a value"), ("Infinity", "expected a value"),
            ("0x10", "unexpected 'x' after the JSON value"),
        ] {
            let message = refusal(text)
            XCTAssertTrue(message.contains(problem), "\(text): \(message)")
        }
    }

    func testTrailingGarbageIsRefused() throws {
        XCTAssertEqual(refusal("{} x"), "line 1, column 4: unexpected 'x' after the JSON value; only whitespace may follow it")
        XCTAssertTrue(refusal("{}{}").contains("unexpected '{' after the JSON value"))
        XCTAssertTrue(refusal("1 2").contains("unexpected '2' after"))
        XCTAssertTrue(refusal("\"a\"b").contains("unexpected 'b' after"))
        XCTAssertTrue(refusal(Array("{}".utf8) + [0]).contains("unexpected byte 0x00 after"))
        XCTAssertEqual(try parse(" {} \r\n\t"), .object([]), "whitespace after the value is fine")
    }

    func testTextThatIsNotUTF8IsRefused() {
        XCTAssertEqual(refusal(Array(#"{"a": ""#.utf8) + [0xFF] + Array(#""}"#.utf8)), "line 1, column 7: a string that is not UTF-8 text")
        XCTAssertTrue(refusal(Array("\"".utf8) + [0xC0, 0xAF] + Array("\"".utf8)).contains("not UTF-8"), "an overlong '/'")
        XCTAssertTrue(refusal(Array("\"".utf8) + [0xED, 0xA0, 0x80] + Array("\"".utf8)).contains("not UTF-8"), "a surrogate as UTF-8")
        XCTAssertTrue(refusal(Array("\"".utf8) + [0xE2, 0x82] + Array("\"".utf8)).contains("not UTF-8"), "a cut sequence")
        XCTAssertEqual(refusal([0xFF]), "line 1, column 1: expected a value (an object, array, string, number, true, false or null), found byte 0xFF")
        XCTAssertTrue(refusal([0xFE, 0xFF, 0, UInt8(ascii: "1")]).contains("found byte 0xFE"), "UTF-16 is not read")
    }

    func testStringsAndEscapesAreChecked() {
        for (text, problem) in [
            (#""\x""#, #"unknown escape \'x'"#), (#""\u12""#, "four hex digits"), (#""\u12G4""#, "four hex digits"),
            (#""\ud800""#, "first half of a surrogate pair without the second"),
            (#""\ud800\u0041""#, "first half of a surrogate pair without the second"),
            (#""\udc00""#, "second half of a surrogate pair without the first"),
            ("\"a\nb\"", "control character U+000A inside a string"), ("\"\u{1}\"", "control character U+0001"),
            ("'a'", "found '''"), (#"{"a" 1}"#, "expected ':' after a key, found '1'"), (#"{a: 1}"#, "expected a string key or '}', found 'a'"),
            (#"{"a": 1,}"#, "expected a string key after ',', found '}'"), ("[1,]", "expected a value"), ("[1 2]", "expected ',' or ']' after an element"),
            (#"{"a": 1 "b": 2}"#, "expected ',' or '}' after a member, found '\"'"), ("tru", "expected a value"), ("nul", "expected a value"),
        ] {
            let message = refusal(text)
            XCTAssertTrue(message.contains(problem), "\(text): \(message)")
        }
    }

    func testErrorsSayWhere() {
        XCTAssertEqual(refusal("{\n  \"engine\": \"mmsg\",\n  \"workers\": 2,\n}"), "line 4, column 1: expected a string key after ',', found '}'")
        XCTAssertEqual(refusal("[\n\n   ?]"), "line 3, column 4: expected a value (an object, array, string, number, true, false or null), found '?'")
    }

    func testSizeIsBounded() throws {
        let text = Array(("[" + String(repeating: "0,", count: 999) + "0]").utf8)
        XCTAssertEqual(try JSONValue(parsing: text, maximumBytes: text.count).elements?.count, 1000)
        XCTAssertThrowsError(try JSONValue(parsing: text, maximumBytes: text.count - 1)) { error in
            XCTAssertEqual("\(error)", "line 1, column 1: \(text.count) bytes of text, more than the \(text.count - 1) accepted")
        }
    }

    /// Any single byte of a document replaced by any byte: an answer, never a trap; whatever is
    /// read renders to text that reads back the same.
    func testAnyInputIsTotal() {
        let document = Array(#"{"a": [1, -2.5e3, "x\u00e9\ud83d\ude00", true], "b": {"c": null}}"#.utf8)
        let alphabet = Array(#"{}[]":,\u0dD8eE.-+ 1"#.utf8) + [0x00, 0x0A, 0x80, 0xC3, 0xFF]
        var read = 0
        for position in document.indices {
            for byte in alphabet {
                var bytes = document
                bytes[position] = byte
                guard let value = try? JSONValue(parsing: bytes) else { continue }
                read += 1
                XCTAssertEqual(try? JSONValue(parsing: Array(value.rendered.utf8)), value, String(decoding: bytes, as: UTF8.self))
            }
        }
        XCTAssertGreaterThan(read, 0, "some replacements still read (a digit for a digit)")
    }
}
