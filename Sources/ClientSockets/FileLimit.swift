import Glibc

/// Raises RLIMIT_NOFILE's soft limit to the hard limit. Children (a relay started by
/// `compare`) inherit it, and 2,000 voice streams need thousands of sockets on both sides.
public func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}
