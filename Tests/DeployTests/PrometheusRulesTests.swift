import Foundation
import XCTest

/// The alerting and recording rules through Prometheus's own checker. `promtool check config`
/// is left out: Debian's build of Prometheus has no Kubernetes service discovery and refuses
/// prometheus.yml's kubernetes_sd_configs, which a real Prometheus accepts.
final class PrometheusRulesTests: XCTestCase {
    func testPromtoolAcceptsEveryRuleFile() throws {
        let promtool = try TestToolSupport.require("promtool", install: "Debian: apt-get install prometheus")
        let ruleFiles = deployFiles(withExtensions: ["yml", "yaml"]).filter {
            $0.path.contains("/deploy/prometheus/") && $0.lastPathComponent != "prometheus.yml"
        }
        XCTAssertFalse(ruleFiles.isEmpty, "no rule files under deploy/prometheus")
        let result = try runTool(promtool, ["check", "rules"] + ruleFiles.map(\.path))
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(result.output.components(separatedBy: "SUCCESS:").count - 1, ruleFiles.count, result.output)
    }
}
