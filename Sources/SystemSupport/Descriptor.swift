import Glibc

/// One open file descriptor and its one owner, which closes it when the value ends: the
/// descriptor can be neither leaked nor closed twice (a second close would hit whatever the
/// kernel numbered next). `~Copyable` for that reason: a copy would be a second owner. A type
/// that holds one (a socket object) owns the descriptor through it; `release` hands the number
/// on to an owner outside Swift's view, which must close it itself.
public struct Descriptor: ~Copyable {
    public let rawValue: Int32

    /// Takes ownership of `rawValue`, an open descriptor nobody else will close.
    public init(taking rawValue: Int32) { self.rawValue = rawValue }

    deinit { SystemCall.close(rawValue) }

    /// Gives the descriptor up without closing it; the caller owns the number now.
    public consuming func release() -> Int32 {
        let value = rawValue
        discard self
        return value
    }
}
