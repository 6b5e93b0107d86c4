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
        // libssl for TURN over TLS (turns:, port 443): OpenSSL's TLS 1.2 and 1.3 through a BIO
        // pair, so the worker's engine stays the only I/O (Debian: libssl-dev, as CCrypto).
        .systemLibrary(
            name: "CSSL",
            pkgConfig: "libssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // The one way into the kernel (syscall gate, errors, clock, CPU time), under every module.
        .target(name: "SystemSupport"),
        // The leaf every module shares: Endpoint, the traffic class byte, the HOST:PORT parser,
        // bind-error advice. Values only, no I/O; it depends on nothing but Glibc.
        .target(name: "NetAddress"),
        // The keys of GET /v1/stats, one definition for the relay that writes them and every
        // reader (load generator, engine-bench, tests): a renamed key breaks the build. A leaf,
        // so a reader takes the names without the relay's modules.
        .target(name: "StatsKeys"),
        // The one way both executables cut their command line into options (`--flag value`,
        // `--flag=value`, switches); what each flag means is the executable's own table. A leaf.
        .target(name: "OptionTokens"),
        // JSON's syntax written once: how a string and a number are written, for the relay's API
        // (RelayHTTP) and the load generator's results (LoadGen), and the duplicate-key check
        // the API's bodies and the config file both pass. A leaf, no Foundation.
        .target(name: "JSONSyntax"),
        .target(name: "DatagramEngine", dependencies: ["CURing", "NetAddress", "SystemSupport"]),
        .target(name: "STUN", dependencies: ["CCrypto", "NetAddress"]),
        .target(name: "RelayCore", dependencies: ["DatagramEngine", "FastPath", "NetAddress", "STUN", "SystemSupport", "TLS"]),
        .target(name: "RelayHTTP", dependencies: ["JSONSyntax", "NetAddress", "SystemSupport"]),
        // TURN over TLS: OpenSSL's TLS as an in-memory state machine over a BIO pair, so the
        // worker's engine stays the only I/O. The package's only importer of CSSL: its client
        // sessions serve the TURN client library (TurnClientKit) and the tests.
        .target(name: "TLS", dependencies: ["CSSL"]),
        // The load generator's own C shim (CMSG macros, mmsghdr): it shares no packet code with
        // the relay, so it stays an outside check of the marks.
        .target(name: "CLoadGen"),
        // The outside observer's packet code: its addresses, its UDP socket that reports each
        // datagram's TOS byte, batched receive and send (CLoadGen's cmsg walk), a non-blocking
        // TCP connect, the generated datagram's header. Never the engine's: it is the independent
        // check that marks cross the relay intact.
        .target(name: "ClientSockets", dependencies: ["CLoadGen", "NetAddress", "SystemSupport"]),
        // A TURN client library over UDP, TCP and TLS (allocate, permissions, channels, refresh,
        // a 300 followed, the stream framed with STUN's StreamFrame): what the load generator's
        // clients and the tests speak TURN with. TLS through the TLS module's client session
        // (OpenSSL over memory) carried over its own socket.
        .target(name: "TurnClientKit", dependencies: ["ClientSockets", "CLoadGen", "NetAddress", "STUN", "SystemSupport", "TLS"]),
        // Watching a relay from outside: the one launcher of the relay executable (and of the C
        // reference forwarder), the one HTTP client, the control API, /v1/stats read with StatsKeys.
        .target(name: "RelayObservation", dependencies: ["ClientSockets", "JSONSyntax", "StatsKeys", "SystemSupport"]),
        // Traffic generation: profiles, pacing, sending, receiving, latency, a run's results and
        // the generator's options.
        .target(name: "LoadGen", dependencies: ["BenchSupport", "ClientSockets", "CLoadGen", "JSONSyntax", "NetAddress", "OptionTokens", "RelayObservation",
                                                "StatsKeys", "STUN", "SystemSupport", "TurnClientKit"]),
        // The benchmark side. BenchSupport: CPU placement and the machine a figure was taken on,
        // for engine-bench and the comparison runs alike. LoadComparison: `mediarelay-load
        // compare`, engines against each other at several loads, with its CSV, table and charts.
        .target(name: "BenchSupport", dependencies: ["ClientSockets", "SystemSupport"], path: "bench/support"),
        .target(name: "LoadComparison", dependencies: ["BenchSupport", "ClientSockets", "JSONSyntax", "LoadGen", "RelayObservation"],
                path: "bench/comparison"),
        .executableTarget(
            name: "mediarelay",
            dependencies: ["DatagramEngine", "FastPath", "JSONSyntax", "NetAddress", "OptionTokens", "RelayCore", "RelayHTTP", "StatsKeys", "STUN", "SystemSupport", "TLS"]
        ),
        .executableTarget(
            name: "mediarelay-load",
            dependencies: ["LoadComparison", "LoadGen"]
        ),
        // The engine benchmark (bench/README.md): a forwarder process per backend, ours and C's side by side.
        // The relay executable is started and read through RelayObservation (its launcher, HTTP
        // client and stats keys); none of the load generator's traffic code.
        .executableTarget(name: "engine-bench", dependencies: ["BenchSupport", "CURing", "DatagramEngine", "JSONSyntax", "NetAddress", "RelayObservation",
                                                               "StatsKeys", "SystemSupport"], path: "bench/engine-bench"),
        // The kernel fast path (issue 30; DESIGN "The kernel fast path").
        // CBPF: libbpf (Debian: libbpf-dev) and the map layout shared with the BPF program; only
        // FastPath imports it. The BPF program (Sources/FastPath/bpf/*.bpf.c) is compiled by the
        // toolchain's clang during `swift build` (the BPFCompiler plugin) and embedded by BPFEmbed.
        .systemLibrary(
            name: "CBPF",
            pkgConfig: "libbpf",
            providers: [.apt(["libbpf-dev"])]
        ),
        .executableTarget(name: "BPFEmbed", path: "Plugins/BPFEmbed"),
        .plugin(name: "BPFCompiler", capability: .buildTool(), dependencies: ["BPFEmbed"]),
        .target(name: "FastPath", dependencies: ["CBPF", "NetAddress", "SystemSupport"], exclude: ["bpf"], plugins: ["BPFCompiler"]),
        // Test-only: a process that owns a fast path link and is then killed with -9 (FastPathTests).
        .executableTarget(name: "fastpath-holder", dependencies: ["FastPath", "NetAddress"], path: "Tests/FastPathHolder"),
        .testTarget(name: "FastPathTests", dependencies: ["FastPath", "NetAddress", "SystemSupport", "TestSupport"]),
        // Test-only: counts malloc calls on the calling thread so a test can prove that the
        // packet path allocates nothing per datagram. Never linked into a product.
        .target(name: "MallocCounter", path: "Tests/MallocCounter"),
        .target(name: "TestPorts", path: "Tests/TestPorts"),
        // Test-only: what tests need from the host (tools, ::1: a skip, or a failure under make
        // test) and the one verdict on coturn's uclient. Never linked into a product.
        .target(name: "TestSupport", dependencies: ["NetAddress", "STUN", "TestPorts", "TLS"], path: "Tests/TestSupport"),
        .testTarget(name: "DatagramEngineTests", dependencies: ["DatagramEngine", "NetAddress", "SystemSupport", "MallocCounter", "TestSupport"]),
        .testTarget(name: "RelayCoreTests", dependencies: ["RelayCore", "DatagramEngine", "NetAddress", "STUN", "TLS", "MallocCounter", "TestPorts", "TestSupport"]),
        .testTarget(name: "NetAddressTests", dependencies: ["NetAddress"]),
        .testTarget(name: "OptionTokensTests", dependencies: ["OptionTokens"]),
        .testTarget(name: "JSONSyntaxTests", dependencies: ["JSONSyntax"]),
        .testTarget(name: "STUNTests", dependencies: ["STUN", "NetAddress"]),
        .testTarget(name: "RelayHTTPTests", dependencies: ["JSONSyntax", "RelayHTTP", "TestSupport"]),
        .testTarget(name: "LoadGenTests", dependencies: ["BenchSupport", "ClientSockets", "JSONSyntax", "LoadComparison", "LoadGen", "RelayObservation", "SystemSupport",
                                                     "STUN", "NetAddress", "MallocCounter", "TestPorts", "TestSupport", "TurnClientKit"]),
        .testTarget(name: "mediarelayTests", dependencies: ["mediarelay", "FastPath", "NetAddress", "RelayCore", "TestSupport"]),
        // The load generator's modules too: ClientSockets is the independent observer of the marks
        // on the wire, TurnClientKit the TURN client library the tests speak TURN with, and
        // RelayObservation starts the relay (ServerProcess) and speaks HTTP to it.
        .testTarget(name: "EndToEndTests", dependencies: ["ClientSockets", "DatagramEngine", "JSONSyntax", "NetAddress", "LoadGen", "RelayObservation", "STUN", "StatsKeys", "TLS",
                                                     "TestPorts", "TestSupport", "TurnClientKit"]),
        // mediarelay too: the DaemonSet's command line is parsed by the relay's own option parser.
        .testTarget(name: "DeployTests", dependencies: ["JSONSyntax", "mediarelay", "NetAddress", "RelayObservation", "TestPorts", "TestSupport"]),
        .testTarget(name: "TestSupportTests", dependencies: ["TestSupport"]),
        // Sessions pumped against each other in memory, and against openssl s_client and
        // s_server over loopback TCP; MallocCounter holds the data path to no allocation.
        .testTarget(name: "TLSTests", dependencies: ["TLS", "TestSupport", "MallocCounter"]),
    ],
    swiftLanguageModes: [.v6]
)

// The fuzz targets (issue 38, Fuzz/README.md): declared only when MEDIARELAY_FUZZ names
// libFuzzer's archive without a main, which `make fuzz` (Fuzz/fuzz.sh) does, building the whole
// package with AddressSanitizer and libFuzzer's coverage in a scratch path of its own; `swift
// build` and `swift test` never see them. Each is an executable that enters libFuzzer itself.
if let libFuzzer = Context.environment["MEDIARELAY_FUZZ"] {
    // The relay executable's own parsers (options, config and users files, the control API's
    // bodies) as a library: `make fuzz` fills Fuzz/MediarelayInternals with links to every file of
    // Sources/mediarelay but main.swift, so nothing is copied and nothing goes stale.
    let executable: [Target.Dependency] = ["DatagramEngine", "FastPath", "JSONSyntax", "NetAddress", "OptionTokens", "RelayCore",
                                           "RelayHTTP", "StatsKeys", "STUN", "SystemSupport", "TLS"]
    package.targets += [
        .target(name: "MediarelayInternals", dependencies: executable, path: "Fuzz/MediarelayInternals"),
        .target(name: "FuzzSupport", path: "Fuzz/Support", linkerSettings: [.unsafeFlags([libFuzzer, "-lstdc++"])]),
        .executableTarget(name: "FuzzSTUN", dependencies: ["FuzzSupport", "NetAddress", "STUN"], path: "Fuzz/Targets/FuzzSTUN"),
        .executableTarget(name: "FuzzStreamFraming", dependencies: ["FuzzSupport", "STUN"], path: "Fuzz/Targets/FuzzStreamFraming"),
        .executableTarget(name: "FuzzHTTPRequest", dependencies: ["FuzzSupport", "RelayHTTP"], path: "Fuzz/Targets/FuzzHTTPRequest"),
        .executableTarget(name: "FuzzJSON", dependencies: ["FuzzSupport", "JSONSyntax"], path: "Fuzz/Targets/FuzzJSON"),
        .executableTarget(name: "FuzzControlBodies", dependencies: ["FuzzSupport", "MediarelayInternals", "RelayCore", "RelayHTTP"],
                          path: "Fuzz/Targets/FuzzControlBodies"),
        .executableTarget(name: "FuzzOptions", dependencies: ["FuzzSupport", "MediarelayInternals"], path: "Fuzz/Targets/FuzzOptions"),
        .executableTarget(name: "FuzzConfigFile", dependencies: ["FuzzSupport", "MediarelayInternals"], path: "Fuzz/Targets/FuzzConfigFile"),
        .executableTarget(name: "FuzzTurnRequests", dependencies: ["DatagramEngine", "FuzzSupport", "NetAddress", "RelayCore", "STUN", "SystemSupport"],
                          path: "Fuzz/Targets/FuzzTurnRequests"),
        .executableTarget(name: "FuzzUsersFile", dependencies: ["FuzzSupport", "MediarelayInternals"], path: "Fuzz/Targets/FuzzUsersFile"),
    ]
}
