import Foundation
import TestSupport
import XCTest

/// The relay executable's side of the kernel fast path, with the real program: the options
/// at start, what /v1/stats and /metrics say, one log line where it cannot run, the program
/// gone when the relay is, and the capabilities the deploy files grant. Each relay runs in a
/// namespace of its own (FastPathRelayFixture), so nothing attaches to the host's interfaces.
final class FastPathServerTests: XCTestCase {
    private static let ports = ["--ports", "47600-47609"]

    func testTCOnLoopbackIsInTheStatsSurvivesAReloadAndLeavesWithTheRelay() throws {
        let fixture = try FastPathRelayFixture("tc")
        defer { fixture.remove() }
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("fastpath-\(getpid()).json")
        defer { try? FileManager.default.removeItem(at: config) }
        try Data(#"{"fast_path": "tc", "fast_path_interfaces": ["lo"]}"#.utf8).write(to: config)
        try fixture.start(["--config", config.path] + Self.ports)

        let stats = try fixture.fastPathStats()
        XCTAssertEqual(stats["requested"] as? String, "tc")
        XCTAssertEqual(stats["on"] as? Bool, true, "\(stats); log: \(fixture.fastPathLines)")
        XCTAssertNil(stats["reason"])
        let interfaces = try XCTUnwrap(stats["interfaces"] as? [[String: Any]])
        XCTAssertEqual(interfaces.map { $0["name"] as? String }, ["lo"])
        XCTAssertEqual(interfaces.map { $0["mode"] as? String }, ["tc"])
        XCTAssertEqual(stats["entries"] as? Int, 0)
        XCTAssertGreaterThan(stats["capacity"] as? Int ?? 0, 0)
        for key in ["refusals", "datagrams", "bytes", "failed"] { XCTAssertNotNil(stats[key] as? Int, key) }
        for key in ["ecn_in", "ecn_out"] {
            XCTAssertEqual((stats[key] as? [String: Any]).map { Set($0.keys) }, ["not_ect", "ect1", "ect0", "ce"], key)
        }
        XCTAssertTrue((stats["handed_back"] as? [String: Any])?.keys.contains("checksum_state") == true, "\(stats)")
        XCTAssertEqual(fixture.fastPathLines.count, 1, "\(fixture.fastPathLines)")

        // The program is on lo's ingress (index 1 in a new namespace) by a link the relay holds.
        let links = try fixture.links()
        XCTAssertEqual(links.map(\.interfaceIndex), [1], "\(links)")
        let link = try XCTUnwrap(links.first)
        XCTAssertTrue(try FastPathRelayFixture.stillExists("link", id: link.linkID))

        // A reload that turns it off changes nothing but says it needs a restart.
        try Data(#"{"fast_path": "off", "fast_path_interfaces": ["lo"]}"#.utf8).write(to: config)
        let server = try XCTUnwrap(fixture.server)
        server.signal(SIGHUP)
        let reloaded = server.waitForLine(containing: "SIGHUP: reloaded", timeout: 10)
        XCTAssertTrue(reloaded?.contains("fast_path (running tc) (the fast path attached at start keeps running") == true, "\(reloaded ?? server.log)")
        XCTAssertEqual(try fixture.fastPathStats()["on"] as? Bool, true)
        XCTAssertEqual(try fixture.links(), links)

        try fixture.expectGone(link, after: SIGTERM, exitStatus: 0)
    }

    func testKillNineLeavesNoProgramOnTheInterface() throws {
        let fixture = try FastPathRelayFixture("kill")
        defer { fixture.remove() }
        // Named twice, attached once.
        try fixture.start(["--fast-path", "tc", "--fast-path-interface", "lo", "--fast-path-interface", "lo"] + Self.ports)
        let links = try fixture.links()
        XCTAssertEqual(links.count, 1, "\(links)")
        XCTAssertEqual((try fixture.fastPathStats()["interfaces"] as? [[String: Any]])?.count, 1)
        let link = try XCTUnwrap(links.first, "no tcx link; log: \(fixture.fastPathLines)")
        try fixture.expectGone(link, after: SIGKILL, exitStatus: 128 + SIGKILL)
    }

    func testAMissingInterfaceLeavesItOffWithOneLineAndTheRelayRuns() throws {
        let fixture = try FastPathRelayFixture("missing")
        defer { fixture.remove() }
        try fixture.start(["--fast-path", "xdp", "--fast-path-interface", "nosuch0"] + Self.ports)
        let stats = try fixture.fastPathStats()
        XCTAssertEqual(stats["on"] as? Bool, false)
        XCTAssertEqual(stats["requested"] as? String, "xdp")
        XCTAssertTrue((stats["reason"] as? String)?.contains("no interface named nosuch0") == true, "\(stats)")
        let interfaces = try XCTUnwrap(stats["interfaces"] as? [[String: Any]])
        XCTAssertEqual(interfaces.map { $0["mode"] as? String }, ["off"])
        XCTAssertEqual(fixture.fastPathLines.count, 1, "\(fixture.fastPathLines)")
        XCTAssertTrue(fixture.fastPathLines.first?.contains("no interface named nosuch0") == true, "\(fixture.fastPathLines)")
        XCTAssertEqual(try fixture.get("/healthz").status, 200)
        XCTAssertEqual(try fixture.links(), [])
    }

    /// lo has no native XDP: `xdp` gives it tc and says so in one line, `auto` silently.
    func testAnInterfaceWithoutNativeXDPGetsTCSaidOnceUnderXDPAndSilentlyUnderAuto() throws {
        for (mode, lines) in [("xdp", ["lo refused XDP, so tc there instead", "fast path xdp: tc on lo"]), ("auto", ["fast path auto: tc on lo"])] {
            let fixture = try FastPathRelayFixture("xdp")
            defer { fixture.remove() }
            try fixture.start(["--fast-path", mode, "--fast-path-interface", "lo"] + Self.ports)
            let stats = try fixture.fastPathStats()
            XCTAssertEqual(stats["on"] as? Bool, true, "\(mode): \(stats)")
            XCTAssertEqual((stats["interfaces"] as? [[String: Any]])?.map { $0["mode"] as? String }, ["tc"], "\(mode): \(stats)")
            let logged = fixture.fastPathLines
            XCTAssertEqual(logged.count, lines.count, "\(mode): \(logged)")
            for (line, expected) in zip(logged, lines) { XCTAssertTrue(line.contains(expected), "\(mode): \(line)") }
        }
    }

    /// A veth takes a native XDP program: `auto` and `xdp` attach XDP there, `tc` tc.
    func testAVethGetsXDPUnderAutoAndXDP() throws {
        for (mode, expected) in [("auto", "xdp"), ("xdp", "xdp"), ("tc", "tc")] {
            let fixture = try FastPathRelayFixture("veth")
            defer { fixture.remove() }
            try fixture.namespace.run(["link", "add", "fpv0", "type", "veth", "peer", "name", "fpv1"])
            try fixture.namespace.run(["link", "set", "fpv0", "up"])
            try fixture.namespace.run(["link", "set", "fpv1", "up"])
            try fixture.start(["--fast-path", mode, "--fast-path-interface", "fpv0"] + Self.ports)
            let stats = try fixture.fastPathStats()
            XCTAssertEqual(stats["on"] as? Bool, true, "\(mode): \(stats)")
            XCTAssertEqual((stats["interfaces"] as? [[String: Any]])?.map { $0["mode"] as? String }, [expected], "\(mode): \(stats)")
            XCTAssertEqual(fixture.fastPathLines.count, 1, "\(mode): \(fixture.fastPathLines)")
        }
    }

    func testWithoutCapabilitiesItSaysWhyInOneLineAndTheRelayRuns() throws {
        try HostRequirement.requireTools(["/usr/bin/setpriv"])
        let fixture = try FastPathRelayFixture("nocap")
        defer { fixture.remove() }
        // Root still, but without the capabilities BPF needs (the bounding set limits what
        // root gets at exec).
        let drop = ["setpriv", "--bounding-set=-bpf,-net_admin,-sys_admin,-perfmon", "--inh-caps=-all", "--"]
        try fixture.start(["--fast-path", "tc", "--fast-path-interface", "lo"] + Self.ports, prefix: drop)
        let stats = try fixture.fastPathStats()
        XCTAssertEqual(stats["on"] as? Bool, false)
        XCTAssertTrue((stats["reason"] as? String)?.contains("CAP_BPF") == true, "\(stats)")
        XCTAssertEqual(fixture.fastPathLines.count, 1, "\(fixture.fastPathLines)")
        XCTAssertEqual(try fixture.get("/healthz").status, 200)
    }

    /// The DaemonSet's container (root with only its `capabilities.add`) runs the relay through
    /// the command's own setpriv arguments: as uid 10001 with ambient capabilities that load it.
    func testTheDaemonSetsCapabilitiesLoadTheFastPath() throws {
        try HostRequirement.requireTools(["/usr/bin/setpriv"])
        let container = try XCTUnwrap(try KubernetesManifestFixture().relayContainer)
        let added = try XCTUnwrap(container["securityContext"]?["capabilities"]?["add"]?.elements?.compactMap(\.string))
        let command = try DaemonSetCommandRun(nodeIP: "10.0.0.5", nodeName: "relay-node-1", publicAddress: nil, nextSecret: nil)
        XCTAssertTrue(command.setprivArguments.contains("--reuid=10001"), "\(command.setprivArguments)")
        let asTheContainer = ["setpriv", "--bounding-set=-all," + added.map { "+" + $0.lowercased() }.joined(separator: ","), "--inh-caps=-all", "--"]
        try expectLoads(true, prefix: asTheContainer + ["setpriv"] + command.setprivArguments + ["--"], "the DaemonSet's")
    }

    /// The systemd unit's ambient capabilities, given to an unprivileged user as the unit's
    /// DynamicUser is, load it.
    func testTheSystemdUnitsCapabilitiesLoadTheFastPath() throws {
        let unit = try String(contentsOf: repoRoot.appendingPathComponent("deploy/systemd/mediarelay.service"), encoding: .utf8)
        let line = try XCTUnwrap(unit.split(separator: "\n").first { $0.hasPrefix("AmbientCapabilities=") })
        let capabilities = line.dropFirst("AmbientCapabilities=".count).split(separator: " ")
            .map { "+" + $0.dropFirst("CAP_".count).lowercased() }.joined(separator: ",")
        try expectLoads(true, prefix: Self.unprivileged(capabilities), "the unit's")
    }

    /// Why CAP_PERFMON is in both: without it the verifier refuses the program (it reads the
    /// kernel's socket buffer through a BTF pointer), and without CAP_NET_ADMIN it cannot load
    /// a tc program at all.
    func testNeitherPerfmonNorNetAdminIsSpare() throws {
        for capabilities in ["+bpf,+net_admin", "+bpf,+perfmon"] {
            try expectLoads(false, prefix: Self.unprivileged(capabilities), capabilities)
        }
    }

    /// setpriv as uid 65534 with exactly `capabilities` (ambient, so they survive the exec).
    private static func unprivileged(_ capabilities: String) -> [String] {
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all,\(capabilities)",
         "--ambient-caps=-all,\(capabilities)", "--bounding-set=-all,\(capabilities)", "--"]
    }

    private func expectLoads(_ loads: Bool, prefix: [String], _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try HostRequirement.requireTools(["/usr/bin/setpriv"])
        let fixture = try FastPathRelayFixture("caps")
        defer { fixture.remove() }
        try fixture.start(["--fast-path", "tc", "--fast-path-interface", "lo"] + Self.ports, prefix: prefix)
        let stats = try fixture.fastPathStats()
        XCTAssertEqual(stats["on"] as? Bool, loads, "\(what): \(stats)", file: file, line: line)
        XCTAssertEqual(fixture.fastPathLines.count, 1, "\(what): \(fixture.fastPathLines)", file: file, line: line)
    }

    func testWithoutInterfacesItTakesTheUpOnesCarryingTheRelaysAddresses() throws {
        let fixture = try FastPathRelayFixture("pick")
        defer { fixture.remove() }
        // fp0 and fp1 up with an address each; fpd0 has one but is down.
        try fixture.namespace.run(["link", "add", "fp0", "type", "veth", "peer", "name", "fp1"])
        try fixture.namespace.run(["link", "add", "fpd0", "type", "veth", "peer", "name", "fpd1"])
        for (name, address) in [("fp0", "10.77.0.1/24"), ("fp1", "10.77.0.2/24"), ("fpd0", "10.78.0.1/24")] {
            try fixture.namespace.run(["addr", "add", address, "dev", name])
        }
        for name in ["fp0", "fp1"] { try fixture.namespace.run(["link", "set", name, "up"]) }

        try fixture.start(["--fast-path", "tc", "--relay-address", "10.77.0.1"] + Self.ports)
        var interfaces = try XCTUnwrap(try fixture.fastPathStats()["interfaces"] as? [[String: Any]])
        XCTAssertEqual(interfaces.compactMap { $0["name"] as? String }, ["fp0"], "\(interfaces)")
        fixture.server?.stop()

        // A wildcard: every UP interface with an address, loopback included.
        try fixture.start(["--fast-path", "tc"] + Self.ports)
        interfaces = try XCTUnwrap(try fixture.fastPathStats()["interfaces"] as? [[String: Any]])
        XCTAssertEqual(Set(interfaces.compactMap { $0["name"] as? String }), ["lo", "fp0", "fp1"], "\(interfaces)")
        XCTAssertEqual(Set(interfaces.compactMap { $0["mode"] as? String }), ["tc"])
    }

    /// The metrics with the fast path on pass Prometheus's own checker, and the kernel's
    /// datagrams sit beside the workers' in one family.
    func testMetricsWithTheFastPathPassPromtool() throws {
        let promtool = try TestToolSupport.require("promtool", install: "Debian: apt-get install prometheus")
        let fixture = try FastPathRelayFixture("metrics")
        defer { fixture.remove() }
        try fixture.start(["--fast-path", "tc", "--fast-path-interface", "lo"] + Self.ports)
        let metrics = try fixture.get("/metrics").body
        for series in [#"mediarelay_packets_out_total{path="kernel"} "#, #"mediarelay_packets_out_total{worker="0",path="user"} "#,
                       "mediarelay_fast_path_entries 0", "mediarelay_fast_path_refusals_total ",
                       #"mediarelay_fast_path_interfaces{mode="tc"} 1"#, #"mediarelay_fast_path_handed_back_total{reason="expired"} "#,
                       #"mediarelay_fast_path_ecn_out_total{codepoint="ce"} "#, #"mediarelay_ecn_out_total{worker="0",codepoint="ce"} "#] {
            XCTAssertTrue(metrics.contains(series), "no \(series) in /metrics")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fastpath-metrics-\(getpid()).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(metrics.utf8).write(to: file)
        let checked = try Command.run(["sh", "-c", "\(promtool) check metrics < \(file.path)"])
        // 1: the exposition does not parse; 3: lint problems, of which only these older
        // names' may appear (renaming them would break dashboards).
        XCTAssertNotEqual(checked.status, 1, checked.output)
        let older = ["mediarelay_capacity_total ", "mediarelay_ports_total ", "mediarelay_cpu_ns_per_packet "]
        for problem in checked.output.split(separator: "\n") where !older.contains(where: { problem.hasPrefix($0) }) {
            XCTFail("promtool: \(problem)")
        }
    }
}
