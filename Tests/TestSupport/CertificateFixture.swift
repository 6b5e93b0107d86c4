import Foundation

/// A throwaway PKI for TLS tests, made with the `openssl` command line in a fresh temporary
/// directory (removed in deinit): every path below is a file in it. Keys are EC P-256;
/// certificates are valid from now for 30 days unless said otherwise; the leaves name
/// DNS:localhost and IP:127.0.0.1, so a client that checks names may connect to either.
///
/// Made in about 0.15 s (9 runs of openssl), so each test can have its own. Skips the test
/// when openssl is missing, or fails it under `make test` (HostRequirement).
public final class CertificateFixture: Sendable {
    /// A certificate file ("leaf, then chain"), its key, and the leaf's serial as OpenSSL
    /// prints it (hex, upper case: what `openssl x509 -serial` and TLSServerContext say).
    public struct Server: Sendable {
        public let certificate: String
        public let key: String
        public let serial: String
    }

    public static let openssl = "/usr/bin/openssl"

    public let directory: String
    /// The root every `Server` chains to: what a client trusts.
    public let caCertificate: String
    /// A root that signed nothing here: a client trusting only it must refuse every server.
    public let otherCACertificate: String
    /// CN = localhost, O = mediarelay tests; signed by the root.
    public let server: Server
    /// Another key and another serial, same names and root: what a certificate reload swaps in.
    public let secondServer: Server
    /// Signed by an intermediate CA; its file holds the leaf, then the intermediate, so a
    /// client trusting only the root needs the whole chain sent.
    public let chainedServer: Server
    /// `server`'s key and names, expired yesterday.
    public let expiredServer: Server
    /// A valid private key that belongs to none of the certificates.
    public let mismatchedKey: String
    /// Text that is neither a certificate nor a key.
    public let garbageFile: String
    /// A path in the directory where no file is.
    public let missingFile: String

    public init() throws {
        try HostRequirement.requireTools([Self.openssl])
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("mediarelay-certificates-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        let maker = Maker(directory: directory)
        try maker.writeConfiguration()

        caCertificate = try maker.certificate("ca", subject: "/CN=mediarelay test CA", extensions: "ca")
        otherCACertificate = try maker.certificate("other-ca", subject: "/CN=mediarelay other test CA", extensions: "ca")
        let intermediate = try maker.certificate("intermediate", subject: "/CN=mediarelay test intermediate", extensions: "ca", issuer: "ca")
        server = try maker.leaf("server", issuer: "ca")
        secondServer = try maker.leaf("second-server", issuer: "ca")
        let chained = try maker.leaf("chained-server", issuer: "intermediate")
        let chain = "\(directory)/chained-server-chain.pem"
        try (String(contentsOfFile: chained.certificate, encoding: .utf8) + String(contentsOfFile: intermediate, encoding: .utf8))
            .write(toFile: chain, atomically: true, encoding: .utf8)
        chainedServer = Server(certificate: chain, key: chained.key, serial: chained.serial)
        expiredServer = try maker.expiredLeaf("expired-server", key: server.key, issuer: "ca")
        mismatchedKey = try maker.key("mismatched")
        garbageFile = "\(directory)/garbage.pem"
        try "this is not PEM\n\u{1}\u{2}\u{3}\n".write(toFile: garbageFile, atomically: true, encoding: .utf8)
        missingFile = "\(directory)/missing.pem"
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The openssl runs behind CertificateFixture, one file per key, request and certificate,
/// named for its role ("server.key", "server.csr", "server.pem").
private struct Maker {
    /// Why openssl refused, with its output.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let directory: String

    private var configuration: String { "\(directory)/openssl.cnf" }

    /// Our own configuration, so the host's openssl.cnf cannot change what is made.
    func writeConfiguration() throws {
        try """
        [req]
        distinguished_name = dn
        [dn]
        [ca]
        basicConstraints = critical, CA:TRUE
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        [leaf]
        basicConstraints = CA:FALSE
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:localhost, IP:127.0.0.1
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
    }

    func key(_ name: String) throws -> String {
        let path = "\(directory)/\(name).key"
        try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path])
        return path
    }

    /// A certificate `name`.pem for a new key `name`.key, made in one run: self-signed
    /// without `issuer`, else signed by `issuer`.pem and its key. `extensions`: a section of
    /// the configuration ("ca", "leaf").
    func certificate(_ name: String, subject: String, extensions: String, issuer: String? = nil,
                     serial: String = Maker.randomSerial()) throws -> String {
        let path = "\(directory)/\(name).pem"
        var arguments = ["req", "-x509", "-config", configuration, "-extensions", extensions,
                         "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-noenc", "-keyout", "\(directory)/\(name).key",
                         "-subj", subject, "-days", "30", "-set_serial", "0x" + serial, "-out", path]
        if let issuer { arguments += ["-CA", "\(directory)/\(issuer).pem", "-CAkey", "\(directory)/\(issuer).key"] }
        try run(arguments)
        return path
    }

    /// A server certificate for localhost and 127.0.0.1 with a new key, signed by `issuer`.
    func leaf(_ name: String, issuer: String) throws -> CertificateFixture.Server {
        let serial = Self.randomSerial()
        let path = try certificate(name, subject: Self.leafSubject, extensions: "leaf", issuer: issuer, serial: serial)
        return CertificateFixture.Server(certificate: path, key: "\(directory)/\(name).key", serial: serial)
    }

    /// A server certificate for `key` that expired a day ago. `req` refuses a negative
    /// validity, `x509 -req` does not, so this one goes through a request.
    func expiredLeaf(_ name: String, key: String, issuer: String) throws -> CertificateFixture.Server {
        let serial = Self.randomSerial()
        let request = "\(directory)/\(name).csr"
        let path = "\(directory)/\(name).pem"
        try run(["req", "-new", "-config", configuration, "-key", key, "-subj", Self.leafSubject, "-out", request])
        try run(["x509", "-req", "-in", request, "-CA", "\(directory)/\(issuer).pem", "-CAkey", "\(directory)/\(issuer).key",
                 "-set_serial", "0x" + serial, "-days", "-1", "-extfile", configuration, "-extensions", "leaf", "-out", path])
        return CertificateFixture.Server(certificate: path, key: key, serial: serial)
    }

    private static let leafSubject = "/CN=localhost/O=mediarelay tests"

    /// 8 random bytes in upper-case hex, the first in 0x10-0x7F: positive (no sign byte) and
    /// without a leading zero, so every printer writes it the same way.
    static func randomSerial() -> String {
        let first = UInt8.random(in: 0x10...0x7F)
        let rest = (0..<7).map { _ in UInt8.random(in: 0...255) }
        return ([first] + rest).map { String(format: "%02X", $0) }.joined()
    }

    private func run(_ arguments: [String]) throws {
        let (status, output) = try ChildProcess.run(CertificateFixture.openssl, arguments)
        guard status == 0 else {
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) exited with \(status.map(String.init) ?? "no status (stopped)"): \(output)")
        }
    }
}
