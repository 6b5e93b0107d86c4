import Glibc

/// The files a context loads, checked before OpenSSL reads them: the library reports a missing
/// file as a "system library" error without the cause, and an operator needs the cause
/// ("No such file or directory", "Permission denied") with the path.
enum PEMFile {
    /// Returns when `path` opens for reading; otherwise throws one line naming `role` ("TLS
    /// certificate file"), the path and the cause.
    static func requireReadable(_ path: String, role: String) throws(TLSError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let cause = String(cString: strerror(errno))
            throw TLSError("\(role) \(path) cannot be read: \(cause)")
        }
        close(descriptor)
    }
}
