import Foundation
import XCTest

/// No container engine runs on this machine (docker has no daemon and no registry is reachable
/// for base images), so the image itself cannot be built here. What can be checked is that the
/// build stage copies every directory the manifest names: SwiftPM validates every target's
/// path even when building one product, so a missing COPY breaks the image build.
final class ContainerfileTests: XCTestCase {
    func testBuildStageCopiesEveryTargetOfTheManifest() throws {
        let containerfile = try String(contentsOf: repoRoot.appendingPathComponent("deploy/container/Containerfile"), encoding: .utf8)
        let manifest = try String(contentsOf: repoRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        let copied = containerfile.split(separator: "\n")
            .filter { $0.hasPrefix("COPY ") && !$0.contains("--from") }
            .compactMap { $0.split(separator: " ").dropFirst().first.map(String.init) }
        XCTAssertTrue(copied.contains("Package.swift"))
        // Targets live under Sources/ or Tests/ unless the manifest gives a path.
        var needed: Set<String> = ["Sources", "Tests"]
        let pathPattern = try NSRegularExpression(pattern: #"path:\s*"([^"/]+)"#)
        let range = NSRange(manifest.startIndex..., in: manifest)
        for match in pathPattern.matches(in: manifest, range: range) {
            needed.insert(String(manifest[Range(match.range(at: 1), in: manifest)!]))
        }
        for directory in needed {
            XCTAssertTrue(copied.contains(directory), "the build stage does not COPY \(directory)/, which Package.swift needs")
        }
    }
}
