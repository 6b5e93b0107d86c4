import Glibc
import NetAddress
import TestSupport
import XCTest
@testable import DatagramEngine

/// Plain TCP clients on loopback for the stream tests: non-blocking sockets made with the C
/// calls, outside any engine, so the engine is checked from the outside. Also the process's
/// descriptor count and limit, which the stream tests watch.
enum TCPClientFixture {
    /// A non-blocking socket connecting to `server` (the connect may still be in progress).
    /// `receiveBuffer` and `sendBuffer` set SO_RCVBUF and SO_SNDBUF first, which also stops
    /// the kernel from growing them.
    static func connect(to server: Endpoint, receiveBuffer: Int32? = nil, sendBuffer: Int32? = nil) -> Int32 {
        let family = server.isIPv4 ? AF_INET : AF_INET6
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(fd >= 0, "socket: \(errno)")
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if var size = sendBuffer {
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var storage = sockaddr_storage()
        let length = server.write(to: &storage, family: family)
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        precondition(result == 0 || errno == EINPROGRESS || errno == EAGAIN, "connect: \(errno)")
        return fd
    }

    /// What a non-blocking send or receive did.
    enum Outcome: Equatable {
        case bytes(Int)
        case wouldBlock
        case endOfStream
        case failed(Int32)
    }

    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Outcome {
        let sent = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        if sent >= 0 { return .bytes(sent) }
        return errno == EAGAIN ? .wouldBlock : .failed(errno)
    }

    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        let got = recv(fd, buffer.baseAddress, buffer.count, 0)
        if got > 0 { return .bytes(got) }
        if got == 0 { return .endOfStream }
        return errno == EAGAIN ? .wouldBlock : .failed(errno)
    }

    /// Closes with a reset (SO_LINGER 0) instead of a FIN.
    static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }

    /// The local port of client socket `fd`.
    static func localPort(_ fd: Int32) -> UInt16 {
        SocketNames.local(of: fd)?.port ?? 0
    }

    /// The descriptors this process has open now (/proc/self/fd, less the one reading it).
    static func openDescriptors() -> Set<String> {
        guard let directory = opendir("/proc/self/fd") else { return ["/proc/self/fd cannot be read"] }
        let own = dirfd(directory)
        var open: Set<String> = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name), fd != own else { continue }
            var target = [CChar](repeating: 0, count: 256)
            let length = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
            open.insert("\(name) -> \(length > 0 ? String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?")")
        }
        closedir(directory)
        return open
    }

    /// Raises the soft descriptor limit to at least `wanted` (up to the hard limit).
    static func raiseDescriptorLimit(to wanted: Int) throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        guard limit.rlim_cur < rlim_t(wanted) else { return }
        limit.rlim_cur = min(rlim_t(wanted), limit.rlim_max)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        // A host whose hard limit is lower cannot run the test: a skip with the reason, and a
        // failure under `make test`, like any missing host requirement.
        try HostRequirement.require(limit.rlim_cur >= rlim_t(wanted), "the descriptor limit (\(limit.rlim_max)) is below \(wanted)")
    }

    /// The byte at `offset` of client `client`'s sequence: different per client and offset, so
    /// a byte out of place or from another connection shows.
    static func byte(client: Int, offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: client &* 131 &+ offset &* 7 &+ offset >> 8)
    }
}
