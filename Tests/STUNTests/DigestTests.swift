import Dispatch
import STUN
import Synchronization
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

    /// Each thread keys its own HMAC contexts (HMACContexts): four threads computing MACs with
    /// different keys and digests at once must each get the published values, every time, and
    /// a key longer than the block (hashed first) must not leave state for the next short one.
    func testHMACsOnManyThreadsAtOnceMatchPublishedVectors() {
        let cases: [(key: [UInt8], message: [UInt8], sha1: String, sha256: String)] = [
            ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8), "b617318655057264e28bc0b6fb378c8ef146be00",
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
             "90d0dace1c1bdc957339307803160335bde6df2b",
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ]
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<500 {
                let item = cases[(thread + round) % cases.count]
                let sha1 = hex(Digest.hmacSHA1(key: item.key, item.message))
                let sha256 = hex(Digest.hmacSHA256(key: item.key, item.message))
                if sha1 != item.sha1 || sha256 != item.sha256 {
                    failures.withLock { $0.append("thread \(thread) round \(round): \(sha1) \(sha256)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
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
