@testable import RelayObservation
import SystemSupport
import Glibc
import XCTest
@testable import LoadGen

final class ProcessCPUTests: XCTestCase {
    func testParsesFieldsAfterTheLastParenthesis() throws {
        // A command name with spaces and a ')' must not shift the fields.
        let text = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 1 0 100 1000 10 18446744073709551615\n"
        let cpu = try XCTUnwrap(ProcessCPU(statText: text))
        XCTAssertEqual(cpu.userTicks, 1234)
        XCTAssertEqual(cpu.systemTicks, 567)
        XCTAssertEqual(cpu.seconds, Double(1801) / Double(ProcessCPU.ticksPerSecond), accuracy: 1e-12)
        XCTAssertNil(ProcessCPU(statText: "garbage"))
        XCTAssertNil(ProcessCPU(statText: "1 (x) S 1 2"))
    }

    func testReadsProcSelfStatAndMatchesGetrusage() throws {
        // Burn 0.2 s of CPU, measured as CPU (not wall) time, so that both views have something
        // to count however little of the machine this process gets.
        var x: UInt64 = 1
        let target = ownCPUSeconds() + 0.2
        while ownCPUSeconds() < target { for i in 0..<10_000 as Range<UInt64> { x = x &* 6364136223846793005 &+ i } }
        XCTAssertNotEqual(x, 0)
        let cpu = try XCTUnwrap(ProcessCPU.read(pid: getpid()))
        let own = ownCPUSeconds()
        XCTAssertGreaterThan(cpu.seconds, 0.1)
        // Ticks are 1/USER_HZ and read a moment apart from getrusage: allow a few ticks.
        XCTAssertEqual(cpu.seconds, own, accuracy: 0.05 + own * 0.05)
        XCTAssertNil(ProcessCPU.read(pid: Int32.max))
    }

    func testServerListeningLine() {
        XCTAssertEqual(ServerProcess.listeningAddress(in: "mediarelay[info] http listening on 127.0.0.1:41235"), "127.0.0.1:41235")
        XCTAssertEqual(ServerProcess.listeningAddress(in: "mediarelay[warning] http listening on [::1]:9 (extra)"), "[::1]:9")
        XCTAssertNil(ServerProcess.listeningAddress(in: "mediarelay[info] starting"))
        XCTAssertEqual(ServerProcess.listeningAddress(in: #"{"time":"2026-11-28T06:34:30.123Z","level":"info","msg":"http listening on [::1]:9"}"#),
                       "[::1]:9")
    }
}
