import Foundation
import NetAddress
import OptionTokens

extension ServerOptions {
    /// Parses the server's command line.
    ///
    /// - Parameters:
    ///   - arguments: the arguments after the program name (`CommandLine.arguments.dropFirst()`).
    ///     `--opt value` and `--opt=value` are both accepted.
    ///   - environment: read for `MEDIARELAY_CONTROL_TOKEN` when neither a flag nor the config
    ///     file gives a token, and for `MEDIARELAY_TURN_SECRET` when TURN is served and no
    ///     secret is given otherwise.
    ///   - readFile: reads the `--config` file; the default refuses files over 1 MiB.
    /// - Returns: `.help` or `.version` when asked for (anywhere on the line), else `.run` with
    ///   flags merged over the config file over the defaults.
    /// - Throws: `OptionError` naming the flag, config key or variable that was refused (a
    ///   value the config file gave is named by its file and key, not by its flag).
    static func parse(
        arguments: [String],
        environment: [String: String],
        readFile: (String) throws -> Data = ConfigFile.read
    ) throws(OptionError) -> ParsedCommand {
        // Help and version win anywhere on the line, even beside a mistake.
        if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) { return .help(HelpText.text) }
        if arguments.contains("--version") { return .version("mediarelay \(version)") }
        let line = try CommandLineTokens(arguments)
        if line.wantsHelp { return .help(HelpText.text) }
        if line.wantsVersion { return .version("mediarelay \(version)") }

        var options = ServerOptions()
        var given = Set<OptionKey>()
        var fromConfig = Set<OptionKey>()
        if let path = line.configPath {
            let object = try ConfigFile.load(path: path, readFile: readFile)
            given = try ConfigFile.apply(object, path: path, to: &options)
            fromConfig = given
            options.configPath = path
        }

        // A list on the command line (forward rules, TURN listeners, users, ...) replaces the
        // file's list rather than adding to it, the same "flags win" rule as every other option.
        for key in Set(line.values.map(\.key)) where key.isRepeatable { key.clearList(in: &options) }
        for (key, value) in line.values {
            do throws(ValueProblem) {
                try key.apply(value, to: &options)
            } catch {
                if value.isEmpty { throw OptionError(subject: key.flag, problem: OptionKey.emptyValue(error)) }
                let shown = key.isSecret ? "(value hidden)" : OptionError.quoted(value)
                throw OptionError(subject: "\(key.flag) \(shown)", problem: error.expected)
            }
            given.insert(key)
            fromConfig.remove(key)
        }
        let sources = OptionSources(configPath: line.configPath, fromConfig: fromConfig)
        do throws(OptionError) {
            try options.complete(given: given, sources: sources, environment: environment, readFile: readFile)
        } catch {
            throw sources.naming(error)
        }
        return .run(options)
    }

    /// What follows the flags and the file: the environment's values, the files of users and
    /// secrets, the advertised address's default, and every check of the merged options.
    private mutating func complete(given: Set<OptionKey>, sources: OptionSources, environment: [String: String],
                                   readFile: (String) throws -> Data) throws(OptionError) {
        if controlToken == nil, let token = environment[Self.tokenEnvironmentVariable], !token.isEmpty {
            do throws(ValueProblem) {
                controlToken = try OptionKey.token(token)
            } catch {
                throw OptionError(subject: Self.tokenEnvironmentVariable, problem: error.expected)
            }
        }
        if let path = turnUsersFile {
            turnUsers += try TURNUsersFile.load(path: path, after: turnUsers, givenBy: sources.name(of: .turnUser), readFile: readFile)
        }
        // The variable may be set for every service on a host: only a TURN server without
        // another secret takes it.
        if servesTURN && turnSecrets.isEmpty && turnSecretFile == nil,
           let secret = environment[Self.turnSecretEnvironmentVariable], !secret.isEmpty {
            do throws(ValueProblem) {
                turnSecrets = [try OptionKey.visibleASCII(secret, expected: OptionKey.turnSecret.accepted)]
            } catch {
                throw OptionError(subject: Self.turnSecretEnvironmentVariable, problem: error.expected)
            }
        }
        if let path = turnSecretFile {
            turnSecrets += try TURNSecretFile.load(path: path, readFile: readFile)
        }
        if !given.contains(.advertiseAddress) {
            advertiseAddress = IPLiteral.isWildcard(relayAddress) ? Self.wildcardAdvertiseAddress : relayAddress
            try requireAdvertiseAddressForTURN()
        }
        try validate()
    }

    /// Checks that need the merged options, not a single value.
    func validate() throws(OptionError) {
        if controlToken == nil && !IPLiteral.isLoopback(http.host) {
            throw OptionError(
                subject: "--http \(http)",
                problem: "a listener that is not loopback needs a control token: give --control-token, config key \"control_token\" or \(ServerOptions.tokenEnvironmentVariable)"
            )
        }
        if forwards.count > ServerOptions.maxForwardRules {
            throw OptionError(
                subject: "--forward",
                problem: "\(forwards.count) rules; at most \(ServerOptions.maxForwardRules) are accepted"
            )
        }
        // Sessions bind the relay address and peers are told the advertised one: an IPv6 address
        // cannot stand for an IPv4-only socket or the other way round ("::" takes both).
        if !IPLiteral.isWildcard(relayAddress) || IPLiteral.isIPv4(relayAddress),
           IPLiteral.isIPv4(relayAddress) != IPLiteral.isIPv4(advertiseAddress) {
            throw OptionError(
                subject: "--advertise-address \(advertiseAddress)",
                problem: "is not of the same family as --relay-address \(relayAddress); sessions could not be reached there"
            )
        }
        var listens = Set<HostPort>()
        for rule in forwards where !listens.insert(rule.listen).inserted {
            throw OptionError(
                subject: "--forward \(rule)",
                problem: "listen address \(rule.listen) is used by another rule; each rule needs its own"
            )
        }
        try requireUDPListenersOutsidePorts()
        try Self.requireBelow(.ecnL4SThreshold, ecnL4SThreshold, .ecnClassicThreshold, ecnClassicThreshold,
                              "ECT(1) is marked at the shallower threshold, ECT(0) at the deeper one")
        try Self.requireBelow(.ecnBacklogL4SThreshold, ecnBacklogL4SThreshold, .ecnBacklogClassicThreshold, ecnBacklogClassicThreshold,
                              "ECT(1) is marked after the shorter wait, ECT(0) after the longer one")
        try validateTURN()
    }

    /// An L4S threshold must be below its classic one: the other way round (or equal), classic
    /// senders would be marked first.
    private static func requireBelow(_ l4s: OptionKey, _ l4sValue: Int, _ classic: OptionKey, _ classicValue: Int,
                                     _ why: String) throws(OptionError) {
        guard l4sValue >= classicValue else { return }
        throw OptionError(subject: "\(l4s.flag) \(l4sValue)", problem: "must be below \(classic.flag) (\(classicValue)): \(why)")
    }
}

/// The command line split into options and values, before any value is interpreted.
struct CommandLineTokens {
    var wantsHelp = false
    var wantsVersion = false
    var configPath: String?
    var values: [(key: OptionKey, value: String)] = []

    private static let byFlag = Dictionary(uniqueKeysWithValues: OptionKey.allCases.map { ($0.flag, $0) })

    init(_ arguments: [String]) throws(OptionError) {
        let tokens: [OptionToken]
        do throws(OptionTokenError) {
            tokens = try OptionTokenizer.tokens(arguments) { flag in
                if flag == "--help" || flag == "-h" || flag == "--version" { return false }
                return flag == "--config" || Self.byFlag[flag] != nil ? true : nil
            }
        } catch {
            switch error {
            case .unexpectedArgument(let argument):
                throw OptionError(
                    subject: OptionError.quoted(argument),
                    problem: "unexpected argument; every setting is an option such as --forward LISTEN=UPSTREAM (see --help)"
                )
            case .unknownOption(let flag): throw OptionError(subject: OptionError.quoted(flag), problem: "unknown option (see --help)")
            case .valueNotTaken(let flag): throw OptionError(subject: flag, problem: "takes no value")
            case .missingValue(let flag):
                let accepted = Self.byFlag[flag]?.accepted ?? "a readable JSON file"
                throw OptionError(subject: flag, problem: "missing value; expected \(accepted)")
            }
        }
        var seen = Set<String>()
        for token in tokens {
            let flag = token.flag
            guard let value = token.value else {
                if flag == "--version" { wantsVersion = true } else { wantsHelp = true }
                continue
            }
            let key = Self.byFlag[flag]
            if key?.isRepeatable != true && !seen.insert(flag).inserted {
                let lists = OptionKey.allCases.filter(\.isRepeatable).map(\.flag).joined(separator: ", ")
                throw OptionError(subject: flag, problem: "given more than once; only \(lists) may be repeated")
            }
            if let key {
                if key.isRepeatable && values.count(where: { $0.key == key }) >= key.maxCount {
                    throw OptionError(subject: flag, problem: "given more than \(key.maxCount) times; at most \(key.maxCount) are accepted")
                }
                values.append((key, value))
            } else {
                guard !value.isEmpty else {
                    throw OptionError(subject: flag, problem: "missing value; expected a readable JSON file")
                }
                configPath = value
            }
        }
    }
}
