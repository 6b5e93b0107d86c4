import Foundation
import JSONSyntax
import TestSupport

/// One document of a file under deploy/kubernetes, as PyYAML reads it (passed on as JSON and
/// read with the relay's JSON reader).
struct ManifestDocument {
    let file: URL
    let object: JSONValue

    var kind: String { object["kind"]?.string ?? "" }
    var apiVersion: String { object["apiVersion"]?.string ?? "" }
    var name: String { object["metadata"]?["name"]?.string ?? "" }

    /// The value at a dotted path such as `spec.template.spec.containers.0.args`; numbers
    /// index arrays.
    func value(at path: String) -> JSONValue? {
        var current: JSONValue? = object
        for step in path.split(separator: ".") {
            if let index = Int(step), let array = current?.elements {
                current = array.indices.contains(index) ? array[index] : nil
            } else {
                current = current?[String(step)]
            }
        }
        return current
    }
}

extension JSONValue {
    /// A scalar as a manifest's author wrote it: a string as itself, a number or a boolean as
    /// JSON spells it; nil for null, arrays and objects.
    var text: String? {
        switch self {
        case .string(let text): text
        case .integer, .number, .bool: rendered
        default: nil
        }
    }

    /// An array of strings only, or nil.
    var strings: [String]? {
        guard let elements else { return nil }
        let strings = elements.compactMap(\.string)
        return strings.count == elements.count ? strings : nil
    }

    /// An object whose values are all strings (labels, selectors), or nil.
    var stringMap: [String: String]? {
        guard let members else { return nil }
        let pairs = members.compactMap { key, value in value.string.map { (key, $0) } }
        return pairs.count == members.count ? Dictionary(pairs, uniquingKeysWith: { first, _ in first }) : nil
    }
}

/// Every Kubernetes manifest of deploy/kubernetes, read once through PyYAML (the parser the
/// other deploy checks use).
struct KubernetesManifestFixture {
    static var directory: URL { repoRoot.appendingPathComponent("deploy/kubernetes") }

    let files: [URL]
    let documents: [ManifestDocument]

    /// One python process for all files and all tests (PyYAML's start is most of the cost):
    /// a JSON object mapping each path to its documents. Kept as text, which is Sendable.
    private static let pyYAMLOutput: Result<(files: [URL], json: String), YAMLFailure> = {
        let files = deployFiles(withExtensions: ["yaml", "yml"]).filter { $0.path.hasPrefix(directory.path + "/") }
        let script = "import json,sys,yaml; json.dump({f: [d for d in yaml.safe_load_all(open(f)) if d] for f in sys.argv[1:]}, sys.stdout)"
        guard let result = try? Command.run("/usr/bin/env", ["python3", "-c", script] + files.map(\.path)), result.status == 0 else {
            return .failure(YAMLFailure(description: "python3 with PyYAML could not read deploy/kubernetes (apt-get install python3-yaml)"))
        }
        return .success((files, result.output))
    }()

    struct YAMLFailure: Error, CustomStringConvertible {
        let description: String
    }

    init() throws {
        let output = try Self.pyYAMLOutput.get()
        files = output.files
        let byFile = try JSONValue(parsing: Array(output.json.utf8))
        guard byFile.members != nil else {
            throw YAMLFailure(description: "PyYAML's output for deploy/kubernetes is not an object of documents")
        }
        documents = files.flatMap { file in (byFile[file.path]?.elements ?? []).map { ManifestDocument(file: file, object: $0) } }
    }

    /// The one document of this kind and name.
    func document(kind: String, name: String) -> ManifestDocument? {
        documents.first { $0.kind == kind && $0.name == name }
    }

    /// The DaemonSet's relay container, where most of the fleet's settings live.
    var relayContainer: JSONValue? {
        document(kind: "DaemonSet", name: "mediarelay")?.value(at: "spec.template.spec.containers.0")
    }

    /// A file of the ConfigMap `mediarelay-config`, parsed by the relay's own JSON reader.
    func relayConfig(_ key: String) throws -> (text: String, object: JSONValue) {
        // Not value(at:): the key itself has a dot.
        let text = document(kind: "ConfigMap", name: "mediarelay-config")?.object["data"]?[key]?.string ?? ""
        return (text, try JSONValue(parsing: Array(text.utf8)))
    }
}
