import Foundation
@testable import mediarelay
import NetAddress
import XCTest

/// The DaemonSet's container command, run by /bin/sh as the pod would run it (with a stand-in
/// for the binary that records its arguments), then parsed by the relay's own option parser
/// with the ConfigMap's config.json: every flag and key the fleet runs must exist today.
final class DaemonSetCommandTests: XCTestCase {
    /// Keys of config.next.json that the relay does not know yet (TURN over TCP/TLS, issue 18).
    static let keysStillToCome: Set<String> = [
        "turn_tcp", "turn_tls", "tls_cert", "tls_key",
    ]

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
    }

    func testTheCommandAdvertisesTheListedPublicAddressAndAcceptsBothSecretsWhileRotating() throws {
        let run = try DaemonSetCommandRun(nodeIP: "10.0.0.5", nodeName: "relay-node-1", publicAddress: "203.0.113.10\n", nextSecret: "next-value")
        let options = try run.parse()
        XCTAssertEqual(options.advertiseAddress, "203.0.113.10")
        // Packets still arrive on the node's own address behind the NAT.
        XCTAssertEqual(options.turnListeners, [HostPort(host: "10.0.0.5", port: 3478)])
        XCTAssertEqual(options.turnSecrets, ["secret-value", "next-value"])
    }

    /// Fails when the relay learns one of the keys: then it belongs in config.json, which the
    /// DaemonSet runs, and out of `keysStillToCome`.
    func testTheKeysStillToComeAreUnknownToTheRelayToday() {
        let known = Set(OptionKey.allCases.map(\.configKey))
        XCTAssertEqual(Self.keysStillToCome.intersection(known), [], "the relay has these now: move them into config.json")
    }
}

/// One run of the DaemonSet's container command under a node's environment, as the kubelet
/// would start it: env from the downward API and Secrets filled in, the public-address
/// directory and the binary pointed at temporary stand-ins.
struct DaemonSetCommandRun {
    let arguments: [String]
    let environment: [String: String]
    let configPath: String
    let configData: Data

    init(nodeIP: String, nodeName: String, publicAddress: String?, nextSecret: String?) throws {
        let manifests = try KubernetesManifestFixture()
        let container = try XCTUnwrap(manifests.relayContainer)
        let command = try XCTUnwrap(container["command"] as? [String])
        XCTAssertEqual(command, ["/bin/sh", "-c"])
        var script = try XCTUnwrap((container["args"] as? [String])?.first)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("daemonset-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let recorded = directory.appendingPathComponent("arguments")
        let stub = directory.appendingPathComponent("mediarelay")
        try "#!/bin/sh\nprintf '%s\\0' \"$@\" > '\(recorded.path)'\n".write(to: stub, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: stub.path)
        let addresses = directory.appendingPathComponent("public-address")
        try FileManager.default.createDirectory(at: addresses, withIntermediateDirectories: true)
        if let publicAddress {
            try publicAddress.write(to: addresses.appendingPathComponent(nodeName), atomically: true, encoding: .utf8)
        }
        // The paths the pod has, swapped for the stand-ins; each must be there to be swapped.
        let mounts = container["volumeMounts"] as? [[String: Any]] ?? []
        let addressMount = try XCTUnwrap(mounts.first { $0["name"] as? String == "public-address" }?["mountPath"] as? String)
        for (path, standIn) in [("exec /usr/local/bin/mediarelay ", "exec \(stub.path) "), (addressMount + "/", addresses.path + "/")] {
            XCTAssertTrue(script.contains(path), "the command no longer uses \(path)")
            script = script.replacingOccurrences(of: path, with: standIn)
        }

        var environment = ["PATH": "/usr/bin:/bin"]
        for variable in container["env"] as? [[String: Any]] ?? [] {
            let name = try XCTUnwrap(variable["name"] as? String)
            let source = variable["valueFrom"] as? [String: Any]
            if let value = variable["value"] as? String {
                environment[name] = value
            } else if let field = (source?["fieldRef"] as? [String: Any])?["fieldPath"] as? String {
                environment[name] = try XCTUnwrap(["status.hostIP": nodeIP, "spec.nodeName": nodeName][field], "no test value for \(field)")
            } else if let secret = source?["secretKeyRef"] as? [String: Any], let key = secret["key"] as? String {
                // An optional key that is absent leaves the variable unset, as the kubelet does.
                if secret["optional"] as? Bool == true { environment[name] = nextSecret } else { environment[name] = "\(key)-value" }
            } else {
                XCTFail("\(name): a source this test does not fill in")
            }
        }
        let result = try runTool("/usr/bin/env", ["-i"] + environment.sorted { $0.key < $1.key }.map { "\($0)=\($1)" } + ["/bin/sh", "-c", script])
        XCTAssertEqual(result.status, 0, result.output)
        let text = try String(contentsOf: recorded, encoding: .utf8)
        arguments = text.split(separator: "\0", omittingEmptySubsequences: false).dropLast().map(String.init)
        self.environment = environment

        let configMount = try XCTUnwrap(mounts.first { $0["name"] as? String == "config" }?["mountPath"] as? String)
        configPath = configMount + "/config.json"
        configData = Data(try manifests.relayConfig("config.json").text.utf8)
    }

    struct NotARun: Error {
        let arguments: [String]
    }

    /// The options the relay would start with; fails the test with the relay's own message.
    func parse() throws -> ServerOptions {
        let path = configPath
        let data = configData
        let command = try ServerOptions.parse(arguments: arguments, environment: environment) { requested in
            guard requested == path else { throw CocoaError(.fileNoSuchFile) }
            return data
        }
        guard case .run(let options) = command else { throw NotARun(arguments: arguments) }
        return options
    }
}
