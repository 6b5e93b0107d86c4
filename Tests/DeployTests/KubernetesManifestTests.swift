import Foundation
import XCTest
import JSONSyntax
import TestSupport

/// The Kubernetes version whose API schemas the manifests are checked against: the oldest the
/// manifests are meant for. Everything they use is GA there (DaemonSet maxSurge, policy/v1).
let kubernetesVersion = "1.30"

/// Kinds from CRDs, which kubernetes-validate has no schema for (it ships the core API's only):
/// they are checked for shape here, and their real check is the API server that has the CRD.
let customResourceKinds: [String: String] = [
    "ServiceMonitor": "monitoring.coreos.com/v1, the Prometheus Operator's",
    "Certificate": "cert-manager.io/v1, cert-manager's",
]

final class KubernetesManifestTests: XCTestCase {
    /// `kubernetes-validate --strict`: every field known to the schema of `kubernetesVersion`
    /// with the right type. A kind it has no schema for only earns a warning and exit 0, so the
    /// output is read: a document passes only with an INFO line, or is a known custom resource.
    func testEveryManifestMatchesTheAPISchemasOfTheStatedVersion() throws {
        let validator = try TestToolSupport.require(
            "kubernetes-validate", install: "pip install kubernetes-validate",
            preferred: [repoRoot.appendingPathComponent(".build/test-tools/bin")])
        let manifests = try KubernetesManifestFixture()
        XCTAssertGreaterThanOrEqual(manifests.files.count, 8, "deploy/kubernetes lost files")
        let result = try Command.run(validator, ["--strict", "--kubernetes-version", kubernetesVersion] + manifests.files.map(\.path))
        XCTAssertEqual(result.status, 0, result.output)
        let lines = result.output.split(separator: "\n").map(String.init)

        for document in manifests.documents {
            let passed = lines.contains {
                $0.hasPrefix("INFO \(document.file.path) passed for resource \(document.kind.lowercased())/\(document.name) against version \(kubernetesVersion)")
            }
            if let origin = customResourceKinds[document.kind] {
                XCTAssertTrue(passed || lines.contains { $0.hasPrefix("WARN \(document.file.path) Couldn't find schema for kind \(document.kind)") },
                              "\(document.kind) (\(origin)) was neither validated nor reported without a schema: \(result.output)")
                XCTAssertFalse(document.name.isEmpty, "\(document.file.lastPathComponent): \(document.kind) without metadata.name")
                XCTAssertNotNil(document.object["spec"]?.members, "\(document.file.lastPathComponent): \(document.kind) without spec")
            } else {
                XCTAssertTrue(passed, "\(document.file.lastPathComponent): \(document.kind)/\(document.name) was not validated against \(kubernetesVersion): \(result.output)")
            }
        }
        // A warning for any other kind means a typo in kind or apiVersion went unchecked.
        for line in lines where line.hasPrefix("WARN ") || line.hasPrefix("ERROR ") || line.hasPrefix("FATAL ") {
            XCTAssertTrue(customResourceKinds.keys.contains { line.contains("for kind \($0) ") }, line)
        }
    }

    func testTheDaemonSetRunsOneRelayPerNodeOnTheNodesNetwork() throws {
        let manifests = try KubernetesManifestFixture()
        let daemonSet = try XCTUnwrap(manifests.document(kind: "DaemonSet", name: "mediarelay"))
        XCTAssertEqual(daemonSet.value(at: "spec.template.spec.hostNetwork")?.bool, true)
        XCTAssertEqual(daemonSet.value(at: "spec.template.spec.dnsPolicy")?.string, "ClusterFirstWithHostNet")
        // The next pod binds the same node ports: no surge, one node at a time.
        XCTAssertEqual(daemonSet.value(at: "spec.updateStrategy.rollingUpdate.maxSurge")?.integer, 0)
        XCTAssertEqual(daemonSet.value(at: "spec.updateStrategy.rollingUpdate.maxUnavailable")?.integer, 1)
        // The preStop hook signals PID 1; a shared process namespace would make that the pause process.
        XCTAssertNotEqual(daemonSet.value(at: "spec.template.spec.shareProcessNamespace")?.bool, true)

        let container = try XCTUnwrap(manifests.relayContainer)
        let ports = (container["ports"]?.elements ?? []).map { "\($0["containerPort"]?.text ?? "?")/\($0["protocol"]?.text ?? "TCP")" }
        XCTAssertEqual(Set(ports), ["9480/TCP", "3478/UDP", "3478/TCP", "443/TCP"])
        XCTAssertEqual(container["readinessProbe"]?["httpGet"]?["path"]?.string, "/readyz")
        XCTAssertEqual(container["livenessProbe"]?["httpGet"]?["path"]?.string, "/healthz")
        for probe in ["readinessProbe", "livenessProbe"] {
            XCTAssertEqual(container[probe]?["httpGet"]?["port"]?.integer, 9480, "\(probe) must ask the control port")
        }
    }

    /// The hook starts the drain and outlasts it (a second SIGTERM, the kubelet's, would end
    /// it early), and the grace period outlasts the hook.
    func testThePreStopHookDrainsForDrainSecondsWithinTheGracePeriod() throws {
        let manifests = try KubernetesManifestFixture()
        let daemonSet = try XCTUnwrap(manifests.document(kind: "DaemonSet", name: "mediarelay"))
        let command = try XCTUnwrap(daemonSet.value(at: "spec.template.spec.containers.0.lifecycle.preStop.exec.command")?.strings)
        XCTAssertEqual(Array(command.prefix(2)), ["/bin/sh", "-c"])
        let script = try XCTUnwrap(command.last)
        XCTAssertTrue(script.hasPrefix("kill -TERM 1;"), "the hook must start the drain itself: \(script)")
        let sleep = try XCTUnwrap(script.firstMatch(of: /sleep (\d+)/).flatMap { Int($0.output.1) }, "no sleep in \(script)")
        let drain = try XCTUnwrap(manifests.relayConfig("config.json").object["drain_seconds"]?.integer.map { Int($0) })
        let grace = try XCTUnwrap(daemonSet.value(at: "spec.template.spec.terminationGracePeriodSeconds")?.integer.map { Int($0) })
        XCTAssertGreaterThanOrEqual(sleep, drain, "the kubelet's SIGTERM after the hook would cut the drain short")
        XCTAssertGreaterThanOrEqual(grace, sleep + 10, "the grace period must leave the relay time to exit after the drain")
    }

    /// A DaemonSet has no scale subresource, so Kubernetes accepts only an integer minAvailable
    /// for its pods; the schema cannot say so.
    func testThePodDisruptionBudgetUsesAnIntegerMinAvailable() throws {
        let manifests = try KubernetesManifestFixture()
        let budget = try XCTUnwrap(manifests.document(kind: "PodDisruptionBudget", name: "mediarelay"))
        XCTAssertNil(budget.value(at: "spec.maxUnavailable"))
        XCTAssertNotNil(budget.value(at: "spec.minAvailable")?.integer, "minAvailable must be an integer, not a percentage")
        let daemonSet = try XCTUnwrap(manifests.document(kind: "DaemonSet", name: "mediarelay"))
        XCTAssertEqual(budget.value(at: "spec.selector.matchLabels")?.stringMap,
                       daemonSet.value(at: "spec.selector.matchLabels")?.stringMap)
    }

    func testTheHeadlessServiceNamesEveryRelayPort() throws {
        let manifests = try KubernetesManifestFixture()
        let service = try XCTUnwrap(manifests.document(kind: "Service", name: "mediarelay"))
        XCTAssertEqual(service.value(at: "spec.clusterIP")?.string, "None")
        let servicePorts = (service.value(at: "spec.ports")?.elements ?? []).map { "\($0["name"]?.text ?? "?") \($0["port"]?.text ?? "?")/\($0["protocol"]?.text ?? "TCP")" }
        let containerPorts = (manifests.relayContainer?["ports"]?.elements ?? []).map { "\($0["name"]?.text ?? "?") \($0["containerPort"]?.text ?? "?")/\($0["protocol"]?.text ?? "TCP")" }
        XCTAssertEqual(Set(servicePorts), Set(containerPorts))
        XCTAssertEqual(service.value(at: "spec.selector")?.stringMap, ["app.kubernetes.io/name": "mediarelay"])
    }

    /// The certificate lands where the DaemonSet mounts it and where config.json reads it, and
    /// the Secret is required: the relay runs TLS and would not start without the pair.
    func testTheTLSSecretFollowsCertManagersLayout() throws {
        let manifests = try KubernetesManifestFixture()
        let certificate = try XCTUnwrap(manifests.document(kind: "Certificate", name: "mediarelay-tls"))
        let secretName = try XCTUnwrap(certificate.value(at: "spec.secretName")?.string)
        let daemonSet = try XCTUnwrap(manifests.document(kind: "DaemonSet", name: "mediarelay"))
        let volumes = daemonSet.value(at: "spec.template.spec.volumes")?.elements ?? []
        let volume = try XCTUnwrap(volumes.first { $0["secret"]?["secretName"]?.string == secretName })
        XCTAssertNotEqual(volume["secret"]?["optional"]?.bool, true, "config.json runs TLS: the Secret is not optional")
        // Group-readable only: fsGroup gives the relay's group (the one setpriv runs it as) the
        // key, nobody else.
        XCTAssertEqual(volume["secret"]?["defaultMode"]?.integer, 0o440)
        let command = try DaemonSetCommandRun(nodeIP: "10.0.0.5", nodeName: "relay-node-1", publicAddress: nil, nextSecret: nil)
        let fsGroup = try XCTUnwrap(daemonSet.value(at: "spec.template.spec.securityContext.fsGroup")?.integer)
        XCTAssertTrue(command.setprivArguments.contains("--regid=\(fsGroup)"), "\(command.setprivArguments)")
        let mounts = manifests.relayContainer?["volumeMounts"]?.elements ?? []
        let mountPath = try XCTUnwrap(mounts.first { $0["name"]?.string == volume["name"]?.string }?["mountPath"]?.string)
        let config = try manifests.relayConfig("config.json").object
        XCTAssertEqual(config["tls_cert"]?.string, mountPath + "/tls.crt")
        XCTAssertEqual(config["tls_key"]?.string, mountPath + "/tls.key")
    }

    /// The ConfigMap holds the config the relays run and nothing else: the keys of TURN over
    /// TCP and TLS have left the config.next.json that waited for them.
    func testTheConfigMapHoldsOnlyTheRunningConfig() throws {
        let manifests = try KubernetesManifestFixture()
        let data = manifests.document(kind: "ConfigMap", name: "mediarelay-config")?.object["data"]?.members
        XCTAssertEqual(data.map { Set($0.map(\.0)) }, ["config.json"])
    }
}
