import Foundation
import TestSupport

/// Which Debian packages a built program (mediarelay, mediarelay-load) needs at run time, found
/// the way the dynamic loader finds its libraries, for comparison with what the image's run
/// stage installs.
///
/// The test bundle sits beside the debug build, which links the Swift runtime dynamically
/// from the toolchain (its RUNPATH). The image's build links that runtime statically
/// (`--static-swift-stdlib`), and a static runtime still links the system libraries the shared
/// one does. So each library is resolved as ld.so would (RUNPATH first, then the ldconfig
/// cache): one found through RUNPATH must be a Swift runtime library, and its own libraries
/// are followed in turn; one found in the cache is a system library, mapped to its package
/// with `dpkg -S`. For the static release binary the same walk finds no runtime library and
/// yields the same packages (checked by hand: liburing2, libssl3, libstdc++6, libgcc-s1, libc6).
enum RuntimePackageSupport {
    /// A system library the binary needs, directly or through the Swift runtime.
    struct SystemLibrary: Equatable {
        let soname: String
        let path: String
        /// Who asked for it first: the binary or a Swift runtime library.
        let neededBy: String
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The libraries `--static-swift-stdlib` links into the binary: the Swift runtime, its
    /// Foundation (with its ICU) and Dispatch. A library outside this list found through RUNPATH
    /// would be one the image does not have.
    static func isSwiftRuntime(_ soname: String) -> Bool {
        ["libswift", "libFoundation", "lib_FoundationICU", "libdispatch.", "libBlocksRuntime."].contains { soname.hasPrefix($0) }
    }

    /// The DT_NEEDED sonames and the RUNPATH directories of ELF files, from one `readelf -d`
    /// (each process start costs more than reading a file).
    static func dynamicSections(of files: [String], readelf: String) throws -> [String: (needed: [String], runPath: [String])] {
        let result = try Command.run(readelf, ["-d"] + files)
        guard result.status == 0 else { throw Failure(description: "readelf -d \(files) failed: \(result.output)") }
        var sections: [String: (needed: [String], runPath: [String])] = [:]
        // With several files readelf starts each one's part with "File: PATH".
        var current = files.count == 1 ? files[0] : ""
        for line in result.output.split(separator: "\n") {
            if line.hasPrefix("File: ") {
                current = String(line.dropFirst("File: ".count))
                continue
            }
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]"), open < close else { continue }
            let value = String(line[line.index(after: open)..<close])
            if line.contains("(NEEDED)") {
                sections[current, default: ([], [])].needed.append(value)
            } else if line.contains("(RUNPATH)") || line.contains("(RPATH)") {
                let directory = URL(fileURLWithPath: current).deletingLastPathComponent().path
                sections[current, default: ([], [])].runPath += value.split(separator: ":").map { $0.replacingOccurrences(of: "$ORIGIN", with: directory) }
            }
        }
        return sections
    }

    /// soname -> path for this machine's word size, from `ldconfig -p`.
    static func loaderCache() throws -> [String: String] {
        let result = try Command.run("/sbin/ldconfig", ["-p"])
        guard result.status == 0 else { throw Failure(description: "ldconfig -p failed: \(result.output)") }
        #if arch(x86_64)
        let flag = "x86-64"
        #elseif arch(arm64)
        let flag = "AArch64"
        #else
        let flag = ""
        #endif
        var cache: [String: String] = [:]
        // "\tliburing.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/liburing.so.2"
        for line in result.output.split(separator: "\n") {
            let parts = line.components(separatedBy: " => ")
            guard parts.count == 2, let soname = parts[0].trimmingCharacters(in: .whitespaces).split(separator: " ").first,
                parts[0].contains(flag) else { continue }
            if cache[String(soname)] == nil { cache[String(soname)] = parts[1] }
        }
        return cache
    }

    /// Every system library `binary` needs, through the Swift runtime libraries too; one
    /// readelf per level of the walk.
    static func systemLibraries(of binary: String, readelf: String, loaderCache cache: [String: String]) throws -> [SystemLibrary] {
        var found: [SystemLibrary] = []
        var visited = Set<String>()
        var level = [binary]
        while !level.isEmpty {
            let sections = try dynamicSections(of: level, readelf: readelf)
            var next: [String] = []
            for file in level {
                let section = sections[file] ?? ([], [])
                let asker = URL(fileURLWithPath: file).lastPathComponent
                for soname in section.needed where visited.insert(soname).inserted {
                    let viaRunPath = section.runPath.map { URL(fileURLWithPath: $0).appendingPathComponent(soname).path }
                        .first { FileManager.default.fileExists(atPath: $0) }
                    if let viaRunPath {
                        guard isSwiftRuntime(soname) else {
                            throw Failure(description: "\(asker) loads \(soname) from \(viaRunPath), which is not Swift runtime that --static-swift-stdlib links in, so the image would lack it")
                        }
                        next.append(viaRunPath)
                    } else if let path = cache[soname] {
                        found.append(SystemLibrary(soname: soname, path: path, neededBy: asker))
                    } else {
                        throw Failure(description: "\(asker) needs \(soname), found neither in its RUNPATH \(section.runPath) nor by ldconfig -p")
                    }
                }
            }
            level = next
        }
        return found
    }

    /// The Debian package owning each path. dpkg records the path a package shipped, which on
    /// a merged-/usr system may differ from ldconfig's by /usr or a symlink, so each path is
    /// asked for in all four spellings, in one `dpkg -S` call.
    static func owningPackages(of paths: [String]) throws -> [String: String] {
        func spellings(_ path: String) -> [String] {
            let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            return Array(Set([path, real].flatMap { [$0, $0.hasPrefix("/usr/") ? String($0.dropFirst(4)) : "/usr" + $0] }))
        }
        let result = try Command.run("/usr/bin/dpkg", ["-S"] + paths.flatMap(spellings))
        // "libssl3:amd64: /usr/lib/x86_64-linux-gnu/libcrypto.so.3"; unmatched spellings only add
        // "no path found" lines and exit status 1.
        var ownerOfSpelling: [String: String] = [:]
        for line in result.output.split(separator: "\n") where !line.hasPrefix("dpkg-query:") && !line.hasPrefix("diversion") {
            guard let split = line.range(of: ": /") else { continue }
            let package = line[..<split.lowerBound].split(separator: ",").first.map { String($0.split(separator: ":")[0]).trimmingCharacters(in: .whitespaces) }
            ownerOfSpelling[String(line[line.index(before: split.upperBound)...])] = package
        }
        var owners: [String: String] = [:]
        for path in paths {
            owners[path] = spellings(path).compactMap { ownerOfSpelling[$0] }.first
        }
        return owners
    }
}
