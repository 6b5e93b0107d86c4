import XCTest

@testable import mediarelay

/// Which attachment each interface gets for each `--fast-path` mode, with an in-memory
/// stand-in for the kernel's answer (`InterfaceStandIn`): the real attach is exercised by
/// DeployTests' FastPathServerTests on a real interface.
final class FastPathAttachPlanTests: XCTestCase {
    /// Refuses XDP on the interfaces in `noXDP` and everything on those in `missing`, and
    /// records every attempt.
    final class InterfaceStandIn {
        let noXDP: Set<String>
        let missing: Set<String>
        var attempts: [String] = []

        init(noXDP: Set<String> = [], missing: Set<String> = []) {
            self.noXDP = noXDP
            self.missing = missing
        }

        struct Refusal: Error, CustomStringConvertible {
            let description: String
        }

        func attach(_ name: String, _ attachment: FastPathAttachment) throws {
            attempts.append("\(attachment.rawValue) \(name)")
            if missing.contains(name) { throw Refusal(description: "fast path: no interface named \(name) here") }
            if attachment == .xdp && noXDP.contains(name) { throw Refusal(description: "fast path: \(name) has no native XDP") }
        }
    }

    func testTCAttachesTCOnlyAndNeverTriesXDP() {
        let kernel = InterfaceStandIn()
        let plan = FastPathAttachPlan(["lo", "eth0"], requested: .tc, attach: kernel.attach)
        XCTAssertEqual(plan.interfaces, [.init(name: "lo", mode: .tc, reason: nil), .init(name: "eth0", mode: .tc, reason: nil)])
        XCTAssertEqual(kernel.attempts, ["tc lo", "tc eth0"])
        XCTAssertEqual(plan.notes, [])
    }

    func testXDPFallsBackToTCWithOneLinePerInterfaceThatRefusedIt() {
        let kernel = InterfaceStandIn(noXDP: ["lo"])
        let plan = FastPathAttachPlan(["lo", "eth0"], requested: .xdp, attach: kernel.attach)
        XCTAssertEqual(plan.interfaces.map(\.mode), [.tc, .xdp])
        XCTAssertEqual(kernel.attempts, ["xdp lo", "tc lo", "xdp eth0"])
        XCTAssertEqual(plan.notes, ["fast path: lo refused XDP, so tc there instead (fast path: lo has no native XDP)"])
    }

    func testAutoTakesXDPWhereItCanAndTCElsewhereSilently() {
        let kernel = InterfaceStandIn(noXDP: ["lo"])
        let plan = FastPathAttachPlan(["lo", "eth0"], requested: .auto, attach: kernel.attach)
        XCTAssertEqual(plan.interfaces.map(\.mode), [.tc, .xdp])
        XCTAssertEqual(plan.notes, [])
    }

    func testAnInterfaceWhereNothingAttachesKeepsItsReason() {
        let kernel = InterfaceStandIn(missing: ["nosuch0"])
        let plan = FastPathAttachPlan(["nosuch0", "lo"], requested: .xdp, attach: kernel.attach)
        XCTAssertEqual(plan.interfaces[0], .init(name: "nosuch0", mode: nil, reason: "fast path: no interface named nosuch0 here"))
        XCTAssertEqual(plan.interfaces[1].mode, .xdp)
        XCTAssertTrue(plan.anyAttached)
        XCTAssertFalse(FastPathAttachPlan(["nosuch0"], requested: .tc, attach: kernel.attach).anyAttached)
    }
}
