import OptionTokens
import XCTest

/// The one tokenizer of both executables' command lines, over a table of three flags (table
/// logic: no I/O to stand in for).
final class OptionTokenizerTests: XCTestCase {
    private func tokens(_ arguments: [String]) throws(OptionTokenError) -> [OptionToken] {
        try OptionTokenizer.tokens(arguments) { flag in
            switch flag {
            case "--rate", "--name": true
            case "--json", "-h": false
            default: nil
            }
        }
    }

    private func refusal(_ arguments: [String]) -> OptionTokenError? {
        do throws(OptionTokenError) {
            _ = try tokens(arguments)
            return nil
        } catch {
            return error
        }
    }

    func testValuesSeparateOrJoinedAndSwitchesAlone() throws {
        XCTAssertEqual(try tokens(["--rate", "50", "--json", "--name=a=b", "-h", "--rate", "-5"]), [
            OptionToken(flag: "--rate", value: "50"), OptionToken(flag: "--json", value: nil),
            OptionToken(flag: "--name", value: "a=b"), OptionToken(flag: "-h", value: nil),
            OptionToken(flag: "--rate", value: "-5"),
        ])
        XCTAssertEqual(try tokens(["--name="]), [OptionToken(flag: "--name", value: "")], "an empty value is the caller's to judge")
    }

    func testEachRefusalNamesItsArgument() {
        XCTAssertEqual(refusal(["--rate"]), .missingValue("--rate"), "the line ended")
        XCTAssertEqual(refusal(["--rate", "--json"]), .missingValue("--rate"), "the next flag is not taken for the value")
        XCTAssertEqual(refusal(["--json=yes"]), .valueNotTaken("--json"))
        XCTAssertEqual(refusal(["--colour", "red"]), .unknownOption("--colour"))
        XCTAssertEqual(refusal(["--colour=red"]), .unknownOption("--colour"))
        XCTAssertEqual(refusal(["50"]), .unexpectedArgument("50"))
        XCTAssertEqual(refusal(["-"]), .unexpectedArgument("-"))
    }
}
