import Foundation

/// deploy/container/Containerfile cut into its stages, with continuation lines joined, so a
/// test can ask what one stage installs or runs.
struct ContainerfileFixture {
    struct Stage {
        /// The `FROM` line.
        let from: String
        /// The stage's instructions after FROM, each on one line, comments dropped.
        let instructions: [String]

        /// The packages that `apt-get install` lines of this stage name (options left out).
        var aptPackages: Set<String> {
            var packages = Set<String>()
            for instruction in instructions where instruction.hasPrefix("RUN ") {
                for command in instruction.split(separator: "&&") {
                    let words = command.split(whereSeparator: \.isWhitespace).map(String.init)
                    guard let install = words.firstIndex(of: "install"), words[..<install].contains("apt-get") else { continue }
                    packages.formUnion(words[(install + 1)...].filter { !$0.hasPrefix("-") })
                }
            }
            return packages
        }
    }

    static var file: URL { repoRoot.appendingPathComponent("deploy/container/Containerfile") }

    let stages: [Stage]

    init() throws {
        let text = try String(contentsOf: Self.file, encoding: .utf8)
        var logical: [String] = []
        var pending = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            // A comment inside a continued RUN does not end it (the builder drops such lines).
            if trimmed.hasPrefix("#") { continue }
            if trimmed.hasSuffix("\\") {
                pending += String(trimmed.dropLast()) + " "
            } else {
                logical.append(pending + trimmed)
                pending = ""
            }
        }
        var stages: [Stage] = []
        var from: String?
        var instructions: [String] = []
        for line in logical where !line.isEmpty {
            if line.hasPrefix("FROM ") {
                if let from { stages.append(Stage(from: from, instructions: instructions)) }
                from = line
                instructions = []
            } else if from != nil {
                instructions.append(line)
            }
        }
        if let from { stages.append(Stage(from: from, instructions: instructions)) }
        self.stages = stages
    }

    /// The stage that builds the binaries (`FROM ... AS build`).
    var buildStage: Stage? { stages.first { $0.from.hasSuffix(" AS build") } }

    /// The last stage: what the image runs.
    var runStage: Stage? { stages.last }
}
