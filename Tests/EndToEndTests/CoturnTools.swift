import DatagramEngine
import Foundation
import Glibc
import NetAddress
import TestPorts
import TestSupport
import XCTest

/// coturn's test tools (Debian's `coturn` package, installed by `make test-deps`) driven for
/// interop tests: `turnutils_peer` as the echoing peer, `turnutils_uclient` as the TURN client,
/// and coturn's own `turnserver` to prove this harness against the reference server.
enum Coturn {
    static let peerTool = "/usr/bin/turnutils_peer"
    static let clientTool = "/usr/bin/turnutils_uclient"
    static let serverTool = CoturnServer.tool

    /// Skips (a host reason, probed without any code under test) when coturn is not installed,
    /// except under `make test`, where a missing tool is an error (see TestTools).
    static func requireTools(_ tools: [String] = [peerTool, clientTool]) throws {
        try TestTools.require(tools)
    }

    /// Sends `probe` to `target` from a fresh loopback socket until anything comes back, for
    /// at most `seconds`: a started daemon is ready when it answers, not after a fixed sleep.
    static func waitForAnswer(from target: Endpoint, probe: [UInt8], seconds: Double = 20) throws -> Bool {
        let peers = try Peers(count: 1, family: Endpoint(host: target.isIPv4 ? "127.0.0.1" : "::1", port: 0)!)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            peers.send(from: 0, to: target, probe)
            if !peers.collect(expected: 1, seconds: 0.2).isEmpty { return true }
        }
        return false
    }
}

/// `turnutils_peer -L ADDRESS -p PORT`: echoes every datagram back to its sender (with TOS 0:
/// it cannot be used to check ECN or DSCP marks).
final class TURNEchoPeer {
    let endpoint: Endpoint
    private let child: ChildProcess

    init(address: String = "127.0.0.1") throws {
        try Coturn.requireTools([Coturn.peerTool])
        let port = try FreePort.udp()
        endpoint = Endpoint(host: address, port: port)!
        child = try ChildProcess(Coturn.peerTool, ["-L", address, "-p", "\(port)"])
        guard try Coturn.waitForAnswer(from: endpoint, probe: [1, 2, 3]) else {
            child.stop()
            throw HarnessError.notReady("turnutils_peer on \(endpoint)", child.text)
        }
    }

    func stop() { child.stop() }
}

extension CoturnServer {
    /// Its UDP listener as the relay's tests name addresses.
    var endpoint: Endpoint { Endpoint(host: host, port: port)! }
    var processIdentifier: Int32 { pid }
}

/// One `turnutils_uclient` run against a TURN server, bounded in time, judged by the shared
/// verdict (TestSupport's TURNClientVerdict) against the workload its own arguments asked for.
struct TURNClientRun {
    /// nil when the client had to be stopped at the deadline.
    let status: Int32?
    let output: String
    /// Every argument uclient was given: the workload to expect is read from them.
    let arguments: [String]
    /// Why it did not pass; empty when it did (TURNClientVerdict.problems(in:arguments:)).
    let problems: [String]

    /// Passed: exited 0, sent every byte its arguments asked for, all came back, none was
    /// lost, no error line.
    var passed: Bool { status == 0 && problems.isEmpty }

    /// Runs `turnutils_uclient FLAGS -p PORT -e PEER -r PEERPORT SERVER`; `flags` carries the
    /// credentials (`-u NAME -w PASSWORD`, or `-u NAME -W SECRET`), the workload (`-m N`,
    /// `-n N`, `-l BYTES`, all three required) and the mode (`-s`, `-y`, `-x`, `-z MS`, `-c`).
    static func run(server: Endpoint, peer: Endpoint, flags: [String], seconds: Double = 60) throws -> TURNClientRun {
        try runTogether(server: server, peer: peer, flagSets: [flags], seconds: seconds)[0]
    }

    /// Several clients at once (uclient spends about a second per client connecting on a loaded
    /// machine, so independent runs side by side keep a test short); each bounded by `seconds`.
    static func runTogether(server: Endpoint, peer: Endpoint, flagSets: [[String]], seconds: Double = 60) throws -> [TURNClientRun] {
        try Coturn.requireTools([Coturn.clientTool])
        let target = ["-p", "\(server.port)", "-e", peer.hostText, "-r", "\(peer.port)", server.hostText]
        let children = try flagSets.map { try ChildProcess(Coturn.clientTool, $0 + target) }
        let deadline = Date().addingTimeInterval(seconds)
        return zip(flagSets, children).map { flags, child in
            let status = child.wait(seconds: max(0, deadline.timeIntervalSinceNow))
            let output = child.text
            return TURNClientRun(status: status, output: output, arguments: flags + target,
                                 problems: TURNClientVerdict.problems(in: output, arguments: flags + target))
        }
    }

    /// For failure messages: the command's status, what was wrong and its whole output (stdout
    /// and stderr; a few dozen lines for these runs, bounded anyway), so a failure explains
    /// itself: the error codes uclient got come first, the verdict last.
    var summary: String {
        let lines = output.split(whereSeparator: \.isNewline)
        let shown = lines.count > 300 ? ["(first \(lines.count - 300) lines left out)"] + lines.suffix(300) : lines
        return "uclient \(arguments.joined(separator: " ")): status \(status.map(String.init) ?? "stopped at the deadline"), "
            + "problems \(problems), output (\(lines.count) lines):\n" + shown.joined(separator: "\n")
    }
}

enum HarnessError: Error {
    case notReady(String, String)
}
