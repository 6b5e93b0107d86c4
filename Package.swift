// swift-tools-version:6.1
import PackageDescription

// No package dependencies: Glibc, Dispatch, Foundation and Synchronization come with the
// toolchain, and liburing comes from the system (Debian: liburing-dev). See DESIGN in README.
let package = Package(
    name: "mediarelay",
    products: [
        .executable(name: "mediarelay", targets: ["mediarelay"]),
        .executable(name: "mediarelay-load", targets: ["mediarelay-load"]),
        .library(name: "DatagramEngine", targets: ["DatagramEngine"]),
    ],
    targets: [
        .systemLibrary(
            name: "CURing",
            pkgConfig: "liburing",
            providers: [.apt(["liburing-dev"])]
        ),
        // libcrypto for STUN/TURN: HMAC-SHA1/SHA256, MD5, SHA-256 (Debian: libssl-dev).
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // The one way into the kernel (syscall gate, errors, clock, CPU time), under every module.
        .target(name: "SystemSupport"),
        .target(name: "DatagramEngine", dependencies: ["CURing", "SystemSupport"]),
        .target(name: "STUN", dependencies: ["CCrypto", "DatagramEngine"]),
        .target(name: "RelayCore", dependencies: ["DatagramEngine", "STUN", "SystemSupport"]),
        .target(name: "RelayHTTP", dependencies: ["SystemSupport"]),
        // The load generator's own C shim (CMSG macros, mmsghdr): it shares no packet code with
        // the relay, so it stays an outside check of the marks. It speaks TURN through the STUN
        // codec, whose address values are its only contact with DatagramEngine.
        .target(name: "CLoadGen"),
        .target(name: "LoadGen", dependencies: ["CLoadGen", "SystemSupport", "STUN"]),
        .executableTarget(
            name: "mediarelay",
            dependencies: ["DatagramEngine", "RelayCore", "RelayHTTP", "STUN", "SystemSupport"]
        ),
        .executableTarget(
            name: "mediarelay-load",
            dependencies: ["LoadGen"]
        ),
        // The engine benchmark (bench/README.md): a forwarder process per backend, ours and C's side by side.
        .executableTarget(name: "engine-bench", dependencies: ["DatagramEngine", "SystemSupport", "CURing"], path: "bench/engine-bench"),
        // Test-only: counts malloc calls on the calling thread so a test can prove that the
        // packet path allocates nothing per datagram. Never linked into a product.
        .target(name: "MallocCounter", path: "Tests/MallocCounter"),
        .target(name: "TestPorts", path: "Tests/TestPorts"),
        .testTarget(name: "DatagramEngineTests", dependencies: ["DatagramEngine", "SystemSupport", "MallocCounter"]),
        .testTarget(name: "RelayCoreTests", dependencies: ["RelayCore", "DatagramEngine", "STUN", "MallocCounter", "TestPorts"]),
        .testTarget(name: "STUNTests", dependencies: ["STUN", "DatagramEngine"]),
        .testTarget(name: "RelayHTTPTests", dependencies: ["RelayHTTP"]),
        .testTarget(name: "LoadGenTests", dependencies: ["LoadGen", "SystemSupport", "STUN"]),
        .testTarget(name: "mediarelayTests", dependencies: ["mediarelay"]),
        // LoadGen too: its own socket code is the independent observer of the marks on the wire.
        // STUN too: some tests speak TURN from a plain socket, byte for byte.
        .testTarget(name: "EndToEndTests", dependencies: ["DatagramEngine", "LoadGen", "STUN", "TestPorts"]),
        .testTarget(name: "DeployTests"),
    ],
    swiftLanguageModes: [.v6]
)
