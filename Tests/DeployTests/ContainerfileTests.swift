import Foundation
import JSONSyntax
import TestSupport
import XCTest

/// No container engine runs on this machine (podman's runtime cannot set rlimits here and
/// docker has no daemon), so the image is neither built nor run by these tests. What they
/// check is what the image would need: the files its build stage copies, the -dev packages it
/// installs, and the run-time packages for every library the relay binary loads.
final class ContainerfileTests: XCTestCase {
    func testBuildStageCopiesEveryTargetOfTheManifest() throws {
        let containerfile = try String(contentsOf: ContainerfileFixture.file, encoding: .utf8)
        let manifest = try String(contentsOf: repoRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        let copied = containerfile.split(separator: "\n")
            .filter { $0.hasPrefix("COPY ") && !$0.contains("--from") }
            .compactMap { $0.split(separator: " ").dropFirst().first.map(String.init) }
        XCTAssertTrue(copied.contains("Package.swift"))
        // Targets live under Sources/ or Tests/ unless the manifest gives a path. The fuzz
        // targets, declared only when MEDIARELAY_FUZZ is set (`make fuzz`), are no part of an
        // image's build: the manifest from their condition on is left out.
        var needed: Set<String> = ["Sources", "Tests"]
        let pathPattern = try NSRegularExpression(pattern: #"path:\s*"([^"/]+)"#)
        let built = manifest.components(separatedBy: "Context.environment[\"MEDIARELAY_FUZZ\"]")[0]
        XCTAssertLessThan(built.count, manifest.count, "Package.swift no longer declares its fuzz targets on MEDIARELAY_FUZZ")
        let range = NSRange(built.startIndex..., in: built)
        for match in pathPattern.matches(in: built, range: range) {
            needed.insert(String(built[Range(match.range(at: 1), in: built)!]))
        }
        for directory in needed {
            XCTAssertTrue(copied.contains(directory), "the build stage does not COPY \(directory)/, which Package.swift needs")
        }
    }

    /// Every system library module of Package.swift names its Debian -dev package
    /// (`providers: [.apt([...])]`); SwiftPM finds them with pkg-config.
    func testBuildStageInstallsEveryDevelopmentPackageTheManifestNames() throws {
        let manifest = try String(contentsOf: repoRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        var packages: Set<String> = ["pkg-config"]
        for match in manifest.matches(of: /\.apt\(\[([^\]]*)\]\)/) {
            packages.formUnion(match.output.1.matches(of: /"([^"]+)"/).map { String($0.output.1) })
        }
        XCTAssertTrue(packages.isSuperset(of: ["liburing-dev", "libssl-dev"]), "the manifest's providers were not found: \(packages)")
        let build = try XCTUnwrap(ContainerfileFixture().buildStage, "no `FROM ... AS build` stage")
        XCTAssertEqual(packages.subtracting(build.aptPackages), [], "the build stage does not install these")
    }

    /// The run stage has no Swift toolchain, so the build must link the Swift runtime in.
    func testBuildStageLinksTheSwiftRuntimeStatically() throws {
        let build = try XCTUnwrap(ContainerfileFixture().buildStage)
        let swiftBuilds = build.instructions.filter { $0.hasPrefix("RUN ") && $0.contains("swift build") }
        XCTAssertFalse(swiftBuilds.isEmpty)
        for instruction in swiftBuilds {
            for command in instruction.components(separatedBy: "swift build").dropFirst() {
                XCTAssertTrue(command.prefix { $0 != "&" && $0 != ")" }.contains("--static-swift-stdlib"), "a swift build without --static-swift-stdlib: \(instruction)")
            }
        }
    }

    /// The package of every library the image's two programs load, found from the built
    /// binaries (see RuntimePackageSupport), must be installed by name in the run stage; only
    /// libc6 may come from the base image, which cannot run apt-get without it.
    func testRunStageInstallsThePackageOfEveryLibraryTheProgramsLoad() throws {
        let readelf = try TestToolSupport.require("readelf", install: "Debian: apt-get install binutils")
        _ = try TestToolSupport.require("dpkg", install: "a Debian host")
        let relay = try XCTUnwrap(BuiltProducts.relay, "no mediarelay executable beside the test bundle; run `swift build` first")
        let run = try XCTUnwrap(ContainerfileFixture().runStage)
        let installed = run.aptPackages.union(["libc6"])
        let cache = try RuntimePackageSupport.loaderCache()
        var librariesOf: [String: [RuntimePackageSupport.SystemLibrary]] = [:]
        for program in ["mediarelay", "mediarelay-load"] {
            let binary = relay.deletingLastPathComponent().appendingPathComponent(program).path
            librariesOf[program] = try RuntimePackageSupport.systemLibraries(of: binary, readelf: readelf, loaderCache: cache)
        }
        let owners = try RuntimePackageSupport.owningPackages(of: Array(Set(librariesOf.values.joined().map(\.path))))
        for (program, libraries) in librariesOf.sorted(by: { $0.key < $1.key }) {
            // Every Swift program loads these two, directly or through the runtime's.
            XCTAssertTrue(["libc.so.6", "libstdc++.so.6"].allSatisfy { name in libraries.contains { $0.soname == name } },
                          "\(program): the walk found too little to be working: \(libraries.map(\.soname))")
            for library in libraries {
                let package = try XCTUnwrap(owners[library.path], "dpkg -S knows no package for \(library.path) (\(library.soname))")
                XCTAssertTrue(installed.contains(package),
                              "\(program): \(library.soname) (needed by \(library.neededBy)) comes from \(package), which the run stage does not install")
            }
        }
    }

    /// The image documents the ports the relay listens on as the fleet runs it: every port the
    /// DaemonSet declares (HTTP, TURN over UDP, TCP and TLS) and the relayed range.
    func testRunStageExposesThePortsTheDaemonSetDeclares() throws {
        let run = try XCTUnwrap(ContainerfileFixture().runStage)
        let exposed = Set(run.instructions.filter { $0.hasPrefix("EXPOSE ") }.flatMap { $0.split(separator: " ").dropFirst().map { $0.lowercased() } })
        let container = try XCTUnwrap(KubernetesManifestFixture().relayContainer)
        let declared = (container["ports"]?.elements ?? []).map { "\($0["containerPort"]?.text ?? "?")/\(($0["protocol"]?.string ?? "TCP").lowercased())" }
        XCTAssertFalse(declared.isEmpty)
        XCTAssertEqual(Set(declared).subtracting(exposed), [], "declared by the DaemonSet, not exposed by the image")
        XCTAssertTrue(exposed.contains("40000-40999/udp"), "the relayed port range")
    }
}
