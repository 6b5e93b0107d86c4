import TestSupport
import TLS
import XCTest

/// Loading a server's certificate and key, and a client's CA file: what is refused, and that
/// each refusal is one line naming the file.
final class TLSContextTests: XCTestCase {
    func testLoadsCertificateAndKeyAndDescribesTheLeaf() throws {
        let certificates = try CertificateFixture()
        let context = try TLSServerContext(certificateFile: certificates.server.certificate, keyFile: certificates.server.key)
        XCTAssertEqual(context.serialNumber, certificates.server.serial)
        XCTAssertEqual(context.subject, "CN = localhost, O = mediarelay tests")
        XCTAssertGreaterThan(context.secondsUntilExpiry, 29 * 86_400)
        XCTAssertLessThanOrEqual(context.secondsUntilExpiry, 30 * 86_400)
        XCTAssertTrue(context.notAfter.hasSuffix(" GMT"), context.notAfter)
    }

    func testSerialAndEndDateMatchOpenSSLsOwnReading() throws {
        let certificates = try CertificateFixture()
        let context = try TLSServerContext(certificateFile: certificates.secondServer.certificate, keyFile: certificates.secondServer.key)
        let (status, output) = try ChildProcess.run(CertificateFixture.openssl,
                                                    ["x509", "-noout", "-serial", "-enddate", "-in", certificates.secondServer.certificate])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("serial=\(context.serialNumber)\n"), output)
        XCTAssertTrue(output.contains("notAfter=\(context.notAfter)\n"), output)
    }

    func testChainFileServesItsLeaf() throws {
        let certificates = try CertificateFixture()
        let context = try TLSServerContext(certificateFile: certificates.chainedServer.certificate, keyFile: certificates.chainedServer.key)
        XCTAssertEqual(context.serialNumber, certificates.chainedServer.serial)
    }

    func testExpiredCertificateLoadsAndSaysSo() throws {
        let certificates = try CertificateFixture()
        let context = try TLSServerContext(certificateFile: certificates.expiredServer.certificate, keyFile: certificates.expiredServer.key)
        XCTAssertLessThan(context.secondsUntilExpiry, 0)
        XCTAssertEqual(context.serialNumber, certificates.expiredServer.serial)
    }

    func testEachBadFileIsRefusedInOneLineNamingIt() throws {
        let files = try CertificateFixture()
        let server = files.server
        let cases: [(certificate: String, key: String, names: String, says: String)] = [
            (files.missingFile, server.key, files.missingFile, "No such file or directory"),
            (server.certificate, files.missingFile, files.missingFile, "No such file or directory"),
            (files.garbageFile, server.key, files.garbageFile, "holds no PEM certificate"),
            (server.certificate, files.garbageFile, files.garbageFile, "holds no PEM private key"),
            (server.certificate, server.certificate, server.certificate, "holds no PEM private key"),
            (server.certificate, files.mismatchedKey, files.mismatchedKey, "does not match the certificate in \(server.certificate)"),
            (server.certificate, files.secondServer.key, files.secondServer.key, "does not match"),
        ]
        for bad in cases {
            do {
                _ = try TLSServerContext(certificateFile: bad.certificate, keyFile: bad.key)
                XCTFail("loaded \(bad.certificate) with \(bad.key)")
            } catch {
                assertOneLine(error, naming: bad.names, saying: bad.says)
            }
        }
    }

    func testClientCAFileErrors() throws {
        let certificates = try CertificateFixture()
        for (file, saying) in [(certificates.missingFile, "No such file or directory"), (certificates.garbageFile, "holds no usable PEM certificate")] {
            XCTAssertThrowsError(try TLSClientContext(trusting: file)) { error in
                assertOneLine(error as? TLSError, naming: file, saying: saying)
            }
        }
        XCTAssertNoThrow(try TLSClientContext(trusting: nil))
        XCTAssertNoThrow(try TLSClientContext(trusting: certificates.caCertificate, alpn: ["stun.turn"], maximumVersion: .tls12))
    }

    func testALPNNamesMustFitALengthByte() {
        for name in ["", String(repeating: "x", count: 256)] {
            XCTAssertThrowsError(try TLSClientContext(trusting: nil, alpn: [name])) { error in
                XCTAssertTrue("\(error)".contains("1 to 255 bytes"), "\(error)")
            }
        }
    }

    func testSessionBufferBelowTheMinimumIsRefused() throws {
        let client = try TLSClientContext(trusting: nil)
        XCTAssertThrowsError(try TLSSession(client: client, serverName: nil, bufferBytes: TLSSession.minimumBufferBytes - 1)) { error in
            XCTAssertTrue("\(error)".contains("below the minimum"), "\(error)")
        }
    }
}

/// The error exists, is one line, names `path` and says `saying`.
private func assertOneLine(_ error: TLSError?, naming path: String, saying: String, file: StaticString = #filePath, line: UInt = #line) {
    guard let error else { return XCTFail("no TLSError", file: file, line: line) }
    let text = error.description
    XCTAssertFalse(text.contains("\n"), text, file: file, line: line)
    XCTAssertTrue(text.contains(path), "does not name \(path): \(text)", file: file, line: line)
    XCTAssertTrue(text.contains(saying), "does not say \"\(saying)\": \(text)", file: file, line: line)
}
