import Foundation
import TestSupport

/// TEMPORARY: a test CA and a server certificate made with the `openssl` command line in a
/// temporary directory, for the load generator's TURN over TLS tests. To be replaced by the
/// shared `TestCertificates` fixture of TestSupport when that lands; kept minimal until then.
///
/// The server certificate names 127.0.0.1, ::1 and localhost and is signed by `caFile`;
/// `otherCAFile` is a second CA that signed nothing here, for a check that must refuse.
final class LoadGenTestCertificates {
    let directory: URL
    var caFile: String { directory.appendingPathComponent("ca.pem").path }
    var otherCAFile: String { directory.appendingPathComponent("other-ca.pem").path }
    var certificateFile: String { directory.appendingPathComponent("server.pem").path }
    var keyFile: String { directory.appendingPathComponent("server.key").path }

    static let openssl = "/usr/bin/openssl"

    init() throws {
        try HostRequirement.requireTools([Self.openssl])
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("loadgen-certs-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let extensions = directory.appendingPathComponent("server.ext")
        try "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(to: extensions, atomically: true, encoding: .utf8)
        for name in ["ca", "other-ca"] {
            try run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                     "-keyout", "\(name).key", "-out", "\(name).pem", "-subj", "/CN=mediarelay-load test \(name)",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
        }
        try run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key",
                 "-out", "server.csr", "-subj", "/CN=localhost"])
        try run(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
                 "-out", "server.pem", "-extfile", extensions.path])
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    private func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.openssl)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NSError(domain: "LoadGenTestCertificates", code: Int(process.terminationStatus),
                          userInfo: [NSLocalizedDescriptionKey: "openssl \(arguments.joined(separator: " ")): \(text)"])
        }
    }
}
