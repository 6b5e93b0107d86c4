import Foundation
import JSONSyntax
@testable import mediarelay
import NetAddress
import TestSupport
import XCTest

/// The DaemonSet's container command, run by /bin/sh as the pod would run it (with a stand-in
/// for the binary that records its arguments), then parsed by the relay's own option parser
/// with the ConfigMap's config.json, certificate and key loaded from the Secret's mount as the
/// relay loads them: every flag and key the fleet runs must exist and hold together today.
final class DaemonSetCommandTests: XCTestCase {
    func testTheCommandParsesWithTheNodesOwnAddressAndOneSecret() throws {
        let run = try DaemonSetCommandRun(nodeIP: "10.0.0.5", nodeName: "relay-node-1", publicAddress: nil, nextSecret: nil)
        let options = try run.parse()
        XCTAssertEqual(options.advertiseAddress, "10.0.0.5")
        XCTAssertEqual(options.turnListeners, [HostPort(host: "10.0.0.5", port: 3478)])
        XCTAssertEqual(options.http, HostPort(host: "10.0.0.5", port: 9480))
        XCTAssertEqual(options.turnSecrets, ["secret-value"])
        XCTAssertEqual(options.controlToken, "token-value")
        XCTAssertEqual(options.configPath, run.configPath)
        // From config.json: the fleet shares its realm, so credentials work on every sibling.
        XCTAssertEqual(options.turnRealm, "turn.example.com")
        XCTAssertEqual(options.drainSeconds, 60)
        // Log lines as JSON objects, for the cluster's log shipper.
        XCTAssertEqual(options.logFormat, .json)
        // TURN over TCP beside UDP on 3478, over TLS on 443, with the Secret's pair.
        XCTAssertEqual(options.turnTCPListeners, [HostPort(host: "0.0.0.0", port: 3478)])
        XCTAssertEqual(options.turnTLSListeners, [HostPort(host: "0.0.0.0", port: 443)])
        XCTAssertEqual(options.tlsCert, run.tlsMountStandIn + "/tls.crt")
        XCTAssertEqual(options.tlsKey, run.tlsMountStandIn + "/tls.key")
    }

    func testTheCommandAdvertisesTheListedPublicAddressAndAcceptsBothSecretsWhileRotating() throws {
        let run = try DaemonSetCommandRun(nodeIP: "10.0.0.5", nodeName: "relay-node-1", publicAddress: "203.0.113.10\n", nextSecret: "next-value")
        let options = try run.parse()
        XCTAssertEqual(options.advertiseAddress, "203.0.113.10")
        // Packets still arrive on the node's own address behind the NAT.
        XCTAssertEqual(options.turnListeners, [HostPort(host: "10.0.0.5", port: 3478)])
        XCTAssertEqual(options.turnSecrets, ["secret-value", "next-value"])
    }

    /// Every port the relay listens on is declared on the container, with its protocol: with
    /// hostNetwork that is what keeps another pod that declares it off the node.
    func testEveryListenerOfTheRelayIsADeclaredContainerPort() throws {
        let options = try DaemonSetCommandRun(nodeIP: "10.0.0.5", nodeName: "relay-node-1", publicAddress: nil, nextSecret: nil).parse()
        let listening = Set(options.turnListeners.map { "\($0.port)/UDP" }
            + (options.turnTCPListeners + options.turnTLSListeners + [options.http]).map { "\($0.port)/TCP" })
        let container = try XCTUnwrap(KubernetesManifestFixture().relayContainer)
        let declared = Set((container["ports"]?.elements ?? []).map { "\($0["containerPort"]?.text ?? "?")/\($0["protocol"]?.text ?? "TCP")" })
        XCTAssertEqual(listening, declared)
    }

    /// The pod's relay runs as uid 10001 without capabilities, so a listener below 1024 binds
    /// only where the node's sysctl file lets it.
    func testAPrivilegedPortIsCoveredByTheNodesSysctlFile() throws {
        let options = try DaemonSetCommandRun(nodeIP: "10.0.0.5", nodeName: "relay-node-1", publicAddress: nil, nextSecret: nil).parse()
        let lowest = try XCTUnwrap((options.turnListeners + options.turnTCPListeners + options.turnTLSListeners + [options.http]).map(\.port).min())
        guard lowest < 1024 else { return }
        let file = repoRoot.appendingPathComponent("deploy/sysctl/91-mediarelay-port-443.conf")
        let text = try String(contentsOf: file, encoding: .utf8)
        let setting = try XCTUnwrap(text.firstMatch(of: /(?m)^net\.ipv4\.ip_unprivileged_port_start = (\d+)$/).flatMap { Int($0.output.1) })
        XCTAssertLessThanOrEqual(setting, Int(lowest), "the relay listens on \(lowest), below what \(file.lastPathComponent) allows")
    }

    /// A certificate renewal swaps the Secret's files under a running relay: the command's
    /// watcher sends it one SIGHUP per change, and none while nothing changes. Run with a
    /// stand-in relay that counts SIGHUPs and a stand-in `sleep` that plays the minutes out.
    func testTheCertificateWatcherSendsSIGHUPWhenTheSecretChanges() throws {
        let run = try DaemonSetCommandRun(nodeIP: "10.0.0.5", nodeName: "relay-node-1", publicAddress: nil, nextSecret: nil,
                                          standIns: .watchingTheCertificate)
        XCTAssertEqual(run.sighups, 1, "one renewal, one SIGHUP")
        XCTAssertEqual(run.sleeps, 4, "the watcher stopped before the stand-in sleep said so")
    }
}

/// One run of the DaemonSet's container command under a node's environment, as the kubelet
/// would start it: env from the downward API and Secrets filled in, the public-address, TLS and
/// TURN secret directories and the programs it runs pointed at temporary stand-ins (the TURN
/// secret's file holds `secret-value`, and `nextSecret` on a line of its own while rotating). The TLS stand-in holds
/// a CertificateFixture pair under cert-manager's names, and config.json is pointed at it too,
/// since the relay loads the pair while checking its options.
struct DaemonSetCommandRun {
    /// Shell stand-ins for the programs the command runs, given the run's scratch directory and
    /// the TLS stand-in: the relay (after it has recorded its arguments) and `sleep`.
    struct StandIns: Sendable {
        let relay: @Sendable (_ scratch: String, _ tls: String) -> String
        let sleep: @Sendable (_ scratch: String, _ tls: String) -> String

        /// The relay exits at once; `sleep` fails, which ends the certificate watcher's loop.
        static let parsing = StandIns(relay: { _, _ in "exit 0" }, sleep: { _, _ in "exit 1" })

        /// The relay counts SIGHUPs until `stop` appears (5 s at most); each `sleep` counts
        /// itself: the first passes, the second renews the certificate, the third passes, the
        /// fourth stops both.
        static let watchingTheCertificate = StandIns(
            relay: { scratch, _ in
                """
                trap 'echo hup >> "\(scratch)/sighups"' HUP
                i=0
                while [ ! -e "\(scratch)/stop" ] && [ $i -lt 100 ]; do /bin/sleep 0.05; i=$((i + 1)); done
                """
            },
            sleep: { scratch, tls in
                """
                n=$(cat "\(scratch)/sleeps" 2>/dev/null || echo 0)
                echo $((n + 1)) > "\(scratch)/sleeps"
                case $n in
                  1) echo renewed >> "\(tls)/tls.crt" ;;
                  3) touch "\(scratch)/stop"; exit 1 ;;
                esac
                /bin/sleep 0.2
                """
            })
    }

    let arguments: [String]
    let environment: [String: String]
    let configPath: String
    let configData: Data
    /// Where the test put the Secret's files: config.json's tls_cert and tls_key point here.
    let tlsMountStandIn: String
    /// What the command gave `setpriv` before its `--`: how the relay is started (its user and
    /// capabilities). The stand-in `setpriv` records them and runs the rest as it is.
    let setprivArguments: [String]
    /// SIGHUPs the relay stand-in counted, and runs of the `sleep` stand-in.
    let sighups: Int
    let sleeps: Int
    /// Kept for the pair's files, which the relay loads when `parse` runs.
    private let certificates: CertificateFixture

    init(nodeIP: String, nodeName: String, publicAddress: String?, nextSecret: String?, standIns: StandIns = .parsing) throws {
        let manifests = try KubernetesManifestFixture()
        let container = try XCTUnwrap(manifests.relayContainer)
        let command = try XCTUnwrap(container["command"]?.strings)
        XCTAssertEqual(command, ["/bin/sh", "-c"])
        var script = try XCTUnwrap(container["args"]?.strings?.first)

        certificates = try CertificateFixture()
        let scratch = URL(fileURLWithPath: certificates.directory).appendingPathComponent("daemonset-\(UUID().uuidString)")
        let tools = scratch.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: tools, withIntermediateDirectories: true)
        let tls = scratch.appendingPathComponent("tls")
        try FileManager.default.createDirectory(at: tls, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: certificates.server.certificate, toPath: tls.appendingPathComponent("tls.crt").path)
        try FileManager.default.copyItem(atPath: certificates.server.key, toPath: tls.appendingPathComponent("tls.key").path)
        tlsMountStandIn = tls.path
        let turnSecret = scratch.appendingPathComponent("turn-secret")
        try FileManager.default.createDirectory(at: turnSecret, withIntermediateDirectories: true)
        try ("secret-value\n" + (nextSecret.map { "\($0)\n" } ?? "")).write(to: turnSecret.appendingPathComponent("secrets"),
                                                                           atomically: true, encoding: .utf8)

        let recorded = scratch.appendingPathComponent("arguments")
        let stub = tools.appendingPathComponent("mediarelay")
        let relay = "printf '%s\\0' \"$@\" > '\(recorded.path)'\n" + standIns.relay(scratch.path, tls.path)
        let privileges = scratch.appendingPathComponent("setpriv")
        let setpriv = """
            for argument in "$@"; do shift; [ "$argument" = "--" ] && break; printf '%s\\0' "$argument" >> '\(privileges.path)'; done
            exec "$@"
            """
        for (file, body) in [(stub, relay), (tools.appendingPathComponent("sleep"), standIns.sleep(scratch.path, tls.path)),
                             (tools.appendingPathComponent("setpriv"), setpriv)] {
            try "#!/bin/sh\n\(body)\n".write(to: file, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: file.path)
        }
        let addresses = scratch.appendingPathComponent("public-address")
        try FileManager.default.createDirectory(at: addresses, withIntermediateDirectories: true)
        if let publicAddress {
            try publicAddress.write(to: addresses.appendingPathComponent(nodeName), atomically: true, encoding: .utf8)
        }
        // The paths the pod has, swapped for the stand-ins; each must be there to be swapped.
        let mounts = container["volumeMounts"]?.elements ?? []
        let addressMount = try XCTUnwrap(mounts.first { $0["name"]?.string == "public-address" }?["mountPath"]?.string)
        let tlsMount = try XCTUnwrap(mounts.first { $0["name"]?.string == "tls" }?["mountPath"]?.string)
        let turnSecretMount = try XCTUnwrap(mounts.first { $0["name"]?.string == "turn-secret" }?["mountPath"]?.string)
        for (path, standIn) in [("-- /usr/local/bin/mediarelay ", "-- \(stub.path) "), (addressMount + "/", addresses.path + "/"),
                                (tlsMount + "/", tls.path + "/"), (turnSecretMount + "/", turnSecret.path + "/")] {
            XCTAssertTrue(script.contains(path), "the command no longer uses \(path)")
            script = script.replacingOccurrences(of: path, with: standIn)
        }

        // The image's tools, with the stand-in `sleep` found first.
        var environment = ["PATH": "\(tools.path):/usr/bin:/bin"]
        for variable in container["env"]?.elements ?? [] {
            let name = try XCTUnwrap(variable["name"]?.string)
            let source = variable["valueFrom"]
            if let value = variable["value"]?.string {
                environment[name] = value
            } else if let field = source?["fieldRef"]?["fieldPath"]?.string {
                environment[name] = try XCTUnwrap(["status.hostIP": nodeIP, "spec.nodeName": nodeName][field], "no test value for \(field)")
            } else if let secret = source?["secretKeyRef"], let key = secret["key"]?.string {
                // An optional key that is absent leaves the variable unset, as the kubelet does.
                if secret["optional"]?.bool == true { environment[name] = nextSecret } else { environment[name] = "\(key)-value" }
            } else {
                XCTFail("\(name): a source this test does not fill in")
            }
        }
        let result = try Command.run("/usr/bin/env", ["-i"] + environment.sorted { $0.key < $1.key }.map { "\($0)=\($1)" } + ["/bin/sh", "-c", script])
        XCTAssertEqual(result.status, 0, result.output)
        let text = try String(contentsOf: recorded, encoding: .utf8)
        arguments = text.split(separator: "\0", omittingEmptySubsequences: false).dropLast().map(String.init)
        let given = (try? String(contentsOf: privileges, encoding: .utf8)) ?? ""
        setprivArguments = given.split(separator: "\0", omittingEmptySubsequences: false).dropLast().map(String.init)
        self.environment = environment
        func count(_ name: String, lines: Bool) -> Int {
            let text = (try? String(contentsOf: scratch.appendingPathComponent(name), encoding: .utf8)) ?? ""
            return lines ? text.split(separator: "\n").count : Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        sighups = count("sighups", lines: true)
        sleeps = count("sleeps", lines: false)

        let configMount = try XCTUnwrap(mounts.first { $0["name"]?.string == "config" }?["mountPath"]?.string)
        configPath = configMount + "/config.json"
        let config = try manifests.relayConfig("config.json").text
        XCTAssertTrue(config.contains(tlsMount + "/"), "config.json no longer reads the certificate from \(tlsMount)")
        configData = Data(config.replacingOccurrences(of: tlsMount + "/", with: tls.path + "/").utf8)
    }

    struct NotARun: Error {
        let arguments: [String]
    }

    /// The options the relay would start with; fails the test with the relay's own message.
    func parse() throws -> ServerOptions {
        let path = configPath
        let data = configData
        // config.json from the ConfigMap; any other file (the TURN secret's) from its stand-in.
        let command = try ServerOptions.parse(arguments: arguments, environment: environment) { requested in
            requested == path ? data : try ConfigFile.read(requested)
        }
        guard case .run(let options) = command else { throw NotARun(arguments: arguments) }
        return options
    }
}
