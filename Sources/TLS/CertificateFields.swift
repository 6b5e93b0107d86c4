import CSSL

/// What the logs and tests read from a certificate (an `X509 *` the caller keeps alive),
/// printed as the `openssl x509` command prints it, so a log line can be matched against
/// `openssl x509 -noout -serial -subject -enddate` run on the file.
enum CertificateFields {
    /// The serial number in hex, upper case, without separators ("1234567890ABCDEF").
    static func serial(_ certificate: OpaquePointer) -> String {
        guard let number = ASN1_INTEGER_to_BN(X509_get0_serialNumber(certificate), nil) else {
            ErrorQueue.clear()
            return "?"
        }
        defer { BN_free(number) }
        guard let hex = BN_bn2hex(number) else {
            ErrorQueue.clear()
            return "?"
        }
        defer { mr_openssl_free(hex) }
        return String(cString: hex)
    }

    /// The subject in one line ("CN = localhost, O = mediarelay tests").
    static func subject(_ certificate: OpaquePointer) -> String {
        printed { mr_x509_name_print_oneline($0, X509_get_subject_name(certificate)) >= 0 }
    }

    /// The end of validity as OpenSSL prints it ("Dec 25 03:38:26 2026 GMT").
    static func notAfter(_ certificate: OpaquePointer) -> String {
        printed { ASN1_TIME_print($0, X509_get0_notAfter(certificate)) == 1 }
    }

    /// Seconds from now to the end of validity; negative once it has passed.
    static func secondsUntilExpiry(_ certificate: OpaquePointer) -> Int {
        var days: Int32 = 0
        var seconds: Int32 = 0
        guard ASN1_TIME_diff(&days, &seconds, nil, X509_get0_notAfter(certificate)) == 1 else {
            ErrorQueue.clear()
            return 0
        }
        return Int(days) * 86_400 + Int(seconds)
    }

    /// What `print` wrote into a memory BIO, as text ("?" when it failed).
    private static func printed(_ print: (OpaquePointer) -> Bool) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else {
            ErrorQueue.clear()
            return "?"
        }
        defer { BIO_free(bio) }
        guard print(bio) else {
            ErrorQueue.clear()
            return "?"
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        while true {
            let count = chunk.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
            if count <= 0 { break }
            bytes += chunk[0..<Int(count)]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
