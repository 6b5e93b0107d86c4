import Foundation
import PackagePlugin

/// Compiles every `bpf/*.bpf.c` of the target it is applied to with the toolchain's clang
/// (`-target bpf`), then embeds each object into a generated Swift file (BPFEmbed), so the
/// object code is built from source by `swift build` and never committed. Headers beside the
/// program and in Sources/CBPF (the map layout shared with Swift) are inputs too: a change to
/// either rebuilds the object.
@main
struct BPFCompiler: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let programs = target.directoryURL.appending(path: "bpf")
        let shared = context.package.directoryURL.appending(path: "Sources/CBPF")
        let files = try FileManager.default.contentsOfDirectory(at: programs, includingPropertiesForKeys: nil)
        let headers = try files.filter { $0.pathExtension == "h" }
            + FileManager.default.contentsOfDirectory(at: shared, includingPropertiesForKeys: nil).filter { $0.pathExtension == "h" }
        let clang = try context.tool(named: "clang").url
        let embed = try context.tool(named: "BPFEmbed").url
        return files.filter { $0.lastPathComponent.hasSuffix(".bpf.c") }.sorted { $0.path < $1.path }.flatMap { source in
            let name = String(source.lastPathComponent.dropLast(".bpf.c".count))
            let object = context.pluginWorkDirectoryURL.appending(path: "\(name).bpf.o")
            let swift = context.pluginWorkDirectoryURL.appending(path: "\(name)BPFObject.swift")
            return [
                Command.buildCommand(
                    displayName: "Compiling BPF program \(source.lastPathComponent)",
                    executable: clang,
                    arguments: ["-target", "bpf", "-O2", "-g", "-Wall", "-Werror",
                                "-I\(Self.multiarchIncludes)", "-I\(shared.path)", "-I\(programs.path)",
                                "-c", source.path, "-o", object.path],
                    inputFiles: [source] + headers,
                    outputFiles: [object]
                ),
                Command.buildCommand(
                    displayName: "Embedding BPF object \(name).bpf.o",
                    executable: embed,
                    arguments: [object.path, swift.path, "\(name)BPFObject"],
                    inputFiles: [object],
                    outputFiles: [swift]
                ),
            ]
        }
    }

    /// Debian keeps <asm/...> under the multiarch directory only, and clang -target bpf does
    /// not look there by itself.
    private static var multiarchIncludes: String {
        #if arch(x86_64)
        return "/usr/include/x86_64-linux-gnu"
        #elseif arch(arm64)
        return "/usr/include/aarch64-linux-gnu"
        #else
        #error("add this architecture's multiarch include directory")
        #endif
    }
}
