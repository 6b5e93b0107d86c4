import Foundation
import JSONSyntax

/// One document of a file under deploy/kubernetes, as the JSON object PyYAML reads it as.
struct ManifestDocument {
    let file: URL
    let object: [String: Any]

    var kind: String { object["kind"] as? String ?? "" }
    var apiVersion: String { object["apiVersion"] as? String ?? "" }
    var name: String { (object["metadata"] as? [String: Any])?["name"] as? String ?? "" }

    /// The value at a dotted path such as `spec.template.spec.containers.0.args`; numbers
    /// index arrays.
    func value(at path: String) -> Any? {
        var current: Any? = object
        for step in path.split(separator: ".") {
            if let index = Int(step), let array = current as? [Any] {
                current = array.indices.contains(index) ? array[index] : nil
            } else {
                current = (current as? [String: Any])?[String(step)]
            }
        }
        return current
    }
}

/// Every Kubernetes manifest of deploy/kubernetes, read once through PyYAML (the parser the
/// other deploy checks use) into Foundation values.
struct KubernetesManifestFixture {
    static var directory: URL { repoRoot.appendingPathComponent("deploy/kubernetes") }

    let files: [URL]
    let documents: [ManifestDocument]

    /// One python process for all files and all tests (PyYAML's start is most of the cost):
    /// a JSON object mapping each path to its documents. Kept as text, which is Sendable.
    private static let pyYAMLOutput: Result<(files: [URL], json: String), YAMLFailure> = {
        let files = deployFiles(withExtensions: ["yaml", "yml"]).filter { $0.path.hasPrefix(directory.path + "/") }
        let script = "import json,sys,yaml; json.dump({f: [d for d in yaml.safe_load_all(open(f)) if d] for f in sys.argv[1:]}, sys.stdout)"
        guard let result = try? runTool("/usr/bin/env", ["python3", "-c", script] + files.map(\.path)), result.status == 0 else {
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
        guard let byFile = try JSONSerialization.jsonObject(with: Data(output.json.utf8)) as? [String: [[String: Any]]] else {
            throw YAMLFailure(description: "PyYAML's output for deploy/kubernetes is not an object of documents")
        }
        documents = files.flatMap { file in (byFile[file.path] ?? []).map { ManifestDocument(file: file, object: $0) } }
    }

    /// The one document of this kind and name.
    func document(kind: String, name: String) -> ManifestDocument? {
        documents.first { $0.kind == kind && $0.name == name }
    }

    /// The DaemonSet's relay container, where most of the fleet's settings live.
    var relayContainer: [String: Any]? {
        document(kind: "DaemonSet", name: "mediarelay")?.value(at: "spec.template.spec.containers.0") as? [String: Any]
    }

    /// A file of the ConfigMap `mediarelay-config`, parsed by the relay's own JSON reader.
    func relayConfig(_ key: String) throws -> (text: String, object: JSONValue) {
        // Not value(at:): the key itself has a dot.
        let data = document(kind: "ConfigMap", name: "mediarelay-config")?.object["data"] as? [String: Any]
        let text = data?[key] as? String ?? ""
        return (text, try JSONValue(parsing: Array(text.utf8)))
    }
}
