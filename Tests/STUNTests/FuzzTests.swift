import NetAddress
import STUN
import XCTest

/// Parsing never crashes: the vectors mutated at random (a seeded generator, so a failure
/// repeats), truncated and extended, parsed and every reader run over what parses.
final class FuzzTests: XCTestCase {
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    func testMutatedVectorsNeverCrash() {
        var random = SplitMix(state: 5769)
        let seeds = [Vectors.request, Vectors.responseIPv4, Vectors.responseIPv6, Vectors.longTerm, Vectors.sha256]
        var parsed = 0
        for round in 0..<20_000 {
            var bytes = seeds[round % seeds.count]
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            case 1:
                bytes.removeLast(Int.random(in: 0...bytes.count, using: &random))
            case 2:
                bytes += (0..<Int.random(in: 1...12, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            default:
                // Keep the header's length consistent so the attribute walk itself is exercised.
                let position = Int.random(in: 20..<bytes.count, using: &random)
                bytes[position] = UInt8.random(in: 0...255, using: &random)
                bytes[2] = UInt8((bytes.count - 20) >> 8)
                bytes[3] = UInt8((bytes.count - 20) & 0xFF)
            }
            guard let message = try? StunMessage(bytes: bytes) else { continue }
            parsed += 1
            exerciseReaders(message)
        }
        XCTAssertGreaterThan(parsed, 100, "the mutations should leave some messages well-formed")
    }

    private func exerciseReaders(_ message: StunMessage) {
        for position in 0..<message.index.count {
            let slot = message.index[position]
            _ = try? message.value(slot) { XORAddress.decode($0, message.transactionID) }
            _ = try? message.value(slot, AttributeValue.errorCode)
            _ = try? message.value(slot, AttributeValue.passwordAlgorithms)
            _ = try? message.value(slot, AttributeValue.unknownAttributes)
            _ = try? message.value(slot, AttributeValue.uint32)
            _ = try? message.value(slot) { AttributeValue.text($0, maximum: 763) }
        }
        _ = message.integrity(key: [1, 2, 3])
    }
}
