import MallocCounter
import TestSupport
import TLS
import XCTest

/// The data path's allocations per record are the library's fixed bookkeeping and nothing
/// more: the session adds none, the library keeps its record buffers (no
/// SSL_MODE_RELEASE_BUFFERS), and nothing grows with the record's size.
///
/// Not zero: OpenSSL 3.0's record layer builds each record and each TLS 1.3 nonce header with
/// a WPACKET, whose 40-byte bookkeeping it allocates and frees within the call (measured: 2
/// per write at TLS 1.2; 3 per write and 1 per read at TLS 1.3). No setting avoids them.
final class TLSAllocationTests: XCTestCase {
    /// The most allocations one record may cost, written and read: OpenSSL 3.0's own. A
    /// newer library that allocates less passes too.
    static func perRecord(_ version: TLSVersion) -> UInt64 {
        version == .tls12 ? 2 : 4
    }

    func testRecordsCostOnlyTheLibrarysFixedBookkeeping() throws {
        let certificates = try CertificateFixture()
        let server = try TLSServerContext(certificateFile: certificates.server.certificate, keyFile: certificates.server.key)
        for version in TLSVersion.allCases {
            let client = try TLSClientContext(trusting: certificates.caCertificate, alpn: ["stun.turn"], maximumVersion: version)
            let pair = try SessionPairHarness(server: server, client: client)
            XCTAssertEqual(pair.handshake().client, .done)
            let received = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 10, alignment: 8)
            let wire = UnsafeMutableRawBufferPointer.allocate(byteCount: 32 << 10, alignment: 8)
            defer { [received, wire].forEach { $0.deallocate() } }
            var perSize: [UInt64] = []
            for size in [100, 1_200, 16_000] {
                let message = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
                defer { message.deallocate() }
                message.initializeMemory(as: UInt8.self, repeating: 0x5A)
                XCTAssertEqual(roundTrips(pair, 100, message, received, wire), 200, "\(version) warm-up")
                malloc_counter_start()
                let delivered = roundTrips(pair, 5_000, message, received, wire)
                let allocations = malloc_counter_stop()
                XCTAssertEqual(delivered, 10_000, "\(version), \(size) bytes")
                XCTAssertLessThanOrEqual(allocations, 10_000 * Self.perRecord(version), "\(version), \(size) bytes: allocations for 10,000 records")
                perSize.append(allocations)
            }
            XCTAssertEqual(Set(perSize).count, 1, "\(version): allocations grow with the record's size: \(perSize)")
        }
    }

    /// `count` messages from client to server and back, through `wire`; returns how many
    /// arrived whole.
    private func roundTrips(_ pair: SessionPairHarness, _ count: Int, _ message: UnsafeMutableRawBufferPointer,
                            _ received: UnsafeMutableRawBufferPointer, _ wire: UnsafeMutableRawBufferPointer) -> Int {
        var delivered = 0
        for _ in 0..<count {
            delivered += oneWay(from: pair.client, to: pair.server, message, received, wire)
            delivered += oneWay(from: pair.server, to: pair.client, message, received, wire)
        }
        return delivered
    }

    /// 1 when `message` went from `writer` to `reader` whole, else 0.
    private func oneWay(from writer: TLSSession, to reader: TLSSession, _ message: UnsafeMutableRawBufferPointer,
                        _ received: UnsafeMutableRawBufferPointer, _ wire: UnsafeMutableRawBufferPointer) -> Int {
        guard writer.writePlaintext(UnsafeRawBufferPointer(message)) else { return 0 }
        let taken = writer.takeCiphertext(into: wire)
        guard reader.receiveCiphertext(UnsafeRawBufferPointer(rebasing: wire[0..<taken])) == taken else { return 0 }
        return reader.readPlaintext(into: received) == .bytes(message.count) ? 1 : 0
    }
}
