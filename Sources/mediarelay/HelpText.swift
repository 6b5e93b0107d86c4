import DatagramEngine

/// The `--help` output, generated from `OptionKey` so every option, default and accepted value
/// that the parser knows is documented, and nothing else.
enum HelpText {
    static var text: String {
        var lines = [
            "mediarelay \(ServerOptions.version): UDP media relay",
            "",
            "usage: mediarelay [--config FILE] [OPTIONS]",
            "",
            "Options (--opt value or --opt=value):",
            "  --config FILE",
            "      JSON config file; command-line flags win over its keys",
            "      default: none; accepted: a regular file holding one JSON object, at most 1 MiB",
        ]
        for key in OptionKey.allCases {
            lines.append("  \(key.flag) \(key.valueName)")
            lines.append("      \(key.summary)")
            lines.append("      default: \(key.defaultText); accepted: \(key.accepted)")
        }
        lines += [
            "  --help, -h",
            "      print this text and exit",
            "  --version",
            "      print \"mediarelay \(ServerOptions.version)\" and exit",
            "",
            "Config file keys (JSON object; integers as numbers, repeatable options as arrays of strings;",
            "each key at most once; \"reload\": applied on SIGHUP, the others at the next start):",
        ]
        for key in OptionKey.allCases {
            let type = switch key.configType {
            case .string: "string"
            case .integer: "integer"
            case .number: "number"
            case .stringArray: "array of strings"
            }
            lines.append("  \(key.configKey) (\(type)) = \(key.flag)\(key.isReloadable ? ", reload" : "")")
        }
        lines += [""] + memoryLines + [
            "",
            "Environment:",
            "  \(ServerOptions.tokenEnvironmentVariable)",
            "      control token when neither --control-token nor \"control_token\" is given",
            "  \(ServerOptions.turnSecretEnvironmentVariable)",
            "      REST secret of a TURN server when neither --turn-secret nor --turn-secret-file gives one",
            "",
            "Signals:",
            "  SIGTERM, SIGINT  refuse new sessions (503, Retry-After), send new TURN clients to an alternate,",
            "                   /readyz answers 503; forward for --drain-seconds, exit 0",
            "  SIGHUP           re-read --config (flags still win) and apply the reload keys; load the TLS",
            "                   certificate and key again (with or without --config) for new connections",
            "",
            "TURN:",
            "  --turn-users-file holds one NAME:PASSWORD per line; blank lines and lines starting",
            "  with # are skipped, blanks around a line are ignored; a NAME appears once. --turn-secret-file",
            "  holds one secret per line by the same rules. Keep both out of the command line (ps shows it).",
            "  Peers are refused with 403 unless allowed, in this order: --turn-denied-peer refuses;",
            "  another allocation's relayed address on this server is allowed; the relay's own",
            "  sockets (control, TURN listeners, forward rules, --ports) are refused; --turn-allowed-peer",
            "  allows; loopback, 0.0.0.0/8, ::, private (RFC 1918, 100.64/10, fc00::/7), link-local,",
            "  multicast, broadcast, reserved and documentation blocks (with their ::ffff: and 64:ff9b::",
            "  forms) are refused; any other peer is allowed.",
            "  Over TCP and TLS each connection is one client with at most one allocation, deleted when the",
            "  connection closes; the connection closes when its allocation ends. A TLS handshake must finish",
            "  within 10 s and the first STUN message arrive within 10 s; without an allocation a connection",
            "  closes after 60 s without a message. The relayed side is UDP: REQUESTED-TRANSPORT TCP (RFC 6062)",
            "  is answered 442.",
            "",
            "Fleet:",
            "  With --turn-alternate, a new Allocate this relay would refuse for capacity (--turn-max-allocations,",
            "  no relayed port) or gets while draining is answered 300 Try Alternate, signed, naming the next",
            "  alternate of the client's family (ALTERNATE-SERVER) with REALM and a NONCE the siblings accept when",
            "  they share the nonce key (--turn-nonce-secret, else --turn-secret): a browser signs its Allocate to",
            "  the alternate with them and never retries a 438. Without an alternate, 508 as before (served while",
            "  draining). A per-user quota stays 486. GET /readyz: 200 while taking new work, 503 while draining",
            "  or once allocations, sessions or ports reach --ready-threshold; /healthz stays liveness (503 only",
            "  while draining).",
            "",
            "An --http listener that is not loopback needs a control token.",
            "Bad options exit with code 2 and one line on stderr.",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// What each worker holds in receive buffers, computed by the engine's own sizing so the
    /// figures cannot drift from the code.
    static var memoryLines: [String] {
        func uring(_ size: Int, gro: Bool = false) -> String {
            let configuration = EngineConfiguration(gro: gro, maxDatagramSize: size)
            return "\(configuration.uringBufferCount) x \(configuration.uringBufferSize) B = \(mebibytes(configuration.receiveBufferBytes(.uring)))"
        }
        let options = ServerOptions()
        let defaults = EngineConfiguration(batchSize: options.batchSize, maxDatagramSize: options.maxDatagramSize)
        var withoutGRO = defaults
        withoutGRO.gro = false
        return [
            "Receive buffers per worker (all its datagram memory; forwarding borrows them, never copies):",
            "  uring with --gro on: \(uring(options.maxDatagramSize, gro: true)) (a buffer takes a whole GRO burst)",
            "  uring with --gro off: \(uring(options.maxDatagramSize)) at the default --max-datagram-size; larger sizes get",
            "    fewer buffers, at most \(mebibytes(defaults.uringBufferBytes)) unless two batches need more (65507: \(uring(65_507)))",
            "  mmsg: --batch-size x 64 KiB with --gro on (a buffer takes a whole GRO burst) = \(mebibytes(defaults.receiveBufferBytes(.mmsg)))",
            "    at the defaults; perpacket, and mmsg with --gro off: --batch-size x --max-datagram-size = \(mebibytes(withoutGRO.receiveBufferBytes(.mmsg)))",
        ]
    }

    private static func mebibytes(_ bytes: Int) -> String {
        let tenths = (bytes * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}
