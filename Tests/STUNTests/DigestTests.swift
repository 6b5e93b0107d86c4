import STUN
import XCTest

/// libcrypto through CCrypto, checked against published test vectors (RFC 1321, FIPS 180-2,
/// RFC 2202, RFC 4231), so a wrong binding (digest type, key or length mixed up) fails here.
final class DigestTests: XCTestCase {
    func testDigestsMatchPublishedVectors() {
        XCTAssertEqual(hex(Digest.md5(Array("abc".utf8))), "900150983cd24fb0d6963f7d28e17f72")
        XCTAssertEqual(hex(Digest.sha256(Array("abc".utf8))),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let key = Array("Jefe".utf8)
        let message = Array("what do ya want for nothing?".utf8)
        XCTAssertEqual(hex(Digest.hmacSHA1(key: key, message)), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        XCTAssertEqual(hex(Digest.hmacSHA256(key: key, message)),
                       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    func testConstantTimeCompareAndBase64() {
        let a: [UInt8] = [1, 2, 3, 4]
        XCTAssertTrue([UInt8]([1, 2, 3, 4]).withUnsafeBytes { Digest.constantTimeEqual(a, $0) })
        XCTAssertFalse([UInt8]([1, 2, 3, 5]).withUnsafeBytes { Digest.constantTimeEqual(a, $0) })
        XCTAssertFalse([UInt8]([1, 2, 3]).withUnsafeBytes { Digest.constantTimeEqual(a, $0) })
        XCTAssertEqual(Digest.base64(Array("foobar".utf8)), "Zm9vYmFy")
        XCTAssertEqual(Digest.base64(Array("fooba".utf8)), "Zm9vYmE=")
        XCTAssertEqual(Digest.base64(Array("f".utf8)), "Zg==")
        XCTAssertNotEqual(Digest.random(count: 16), Digest.random(count: 16))
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
