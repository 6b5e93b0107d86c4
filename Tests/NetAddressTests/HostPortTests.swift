import Glibc
import NetAddress
import XCTest

/// The one HOST:PORT parser (options, config file, the load generator's shape check) and the
/// one bind-advice table, with the bad input a user types.
final class HostPortTests: XCTestCase {
    func testWellFormedAddressesParse() throws {
        XCTAssertEqual(try HostPort(parsing: "192.0.2.1:9480"), HostPort(host: "192.0.2.1", port: 9480))
        XCTAssertEqual(try HostPort(parsing: "[2001:db8::1]:443"), HostPort(host: "2001:db8::1", port: 443))
        XCTAssertEqual(try HostPort(parsing: "[::]:3478").description, "[::]:3478")
        XCTAssertEqual(try HostPort(parsing: "0.0.0.0:0", allowsPortZero: true).port, 0)
        XCTAssertEqual(try HostPort(parsing: "[::1]:80").endpoint, Endpoint(host: "::1", port: 80))
    }

    func testBadAddressesAreRefusedWithWhatIsExpected() {
        let bad = ["", ":", "1.2.3.4", "1.2.3.4:", ":80", "::1:80", "[::1]80", "[::1]:", "[1.2.3.4]:80", "2001:db8::1:80",
                   "example.com:80", "1.2.3.4:65536", "1.2.3.4:-1", "1.2.3.4:+80", "1.2.3.4: 80", "1.2.3.4:0x50",
                   "1.2.3.4:0", "[::1%lo]:80x", "1.2.3.4:८०", String(repeating: "9", count: 300) + ":1"]
        for text in bad {
            XCTAssertThrowsError(try HostPort(parsing: text), text) { error in
                XCTAssertTrue("\(error)".contains("expected HOST:PORT or [IPV6]:PORT"), "\(text): \(error)")
            }
        }
    }

    func testTheShapeSplitterRefusesAmbiguousText() {
        XCTAssertNil(Endpoint.split("::1:80"), "an unbracketed IPv6 literal is ambiguous with its port")
        XCTAssertNil(Endpoint.split("[::1"))
        XCTAssertEqual(Endpoint.split("[::1]:80").map { "\($0.host)|\($0.port)|\($0.bracketed)" }, "::1|80|true")
        XCTAssertEqual(Endpoint.split("relay.example:3478").map { "\($0.host)|\($0.port)" }, "relay.example|3478")
    }

    func testBindAdviceNamesTheCureAndTheOption() {
        XCTAssertEqual(BindAdvice.advice(EADDRINUSE, option: "--http"),
                       "another socket holds this port (another mediarelay?): stop it or choose another --http port")
        XCTAssertTrue(BindAdvice.advice(EACCES)?.contains("CAP_NET_BIND_SERVICE") == true)
        XCTAssertNil(BindAdvice.advice(EIO))
    }
}
