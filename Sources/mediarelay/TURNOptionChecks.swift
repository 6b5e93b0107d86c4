import Foundation
import NetAddress

/// The `--turn-users-file` reader: the file is read once at start, through the same bounded
/// reader as the config file, and every user is checked like a `--turn-user` value.
enum TURNUsersFile {
    static func load(path: String, readFile: (String) throws -> Data) throws(OptionError) -> [TURNUser] {
        let subject = "--turn-users-file \(OptionError.quoted(path))"
        let data = try ConfigFile.readSmallFile(path, subject: subject, expected: "a users file", readFile: readFile)
        guard let text = String(data: data, encoding: .utf8) else {
            throw OptionError(subject: subject, problem: "not UTF-8 text")
        }
        do throws(ValueProblem) {
            return try TURNUser.parseFile(text)
        } catch {
            throw OptionError(subject: subject, problem: error.expected)
        }
    }
}

extension ServerOptions {
    /// Checks of the TURN options that need more than one value.
    func validateTURN() throws(OptionError) {
        guard let first = turnListeners.first else {
            // Credentials or peer lists without a listener are a config that does not do what
            // its author thinks.
            let orphan: OptionKey? = if !turnUsers.isEmpty || turnUsersFile != nil { .turnUser }
                else if !turnSecrets.isEmpty { .turnSecret }
                else if !turnAllowedPeers.isEmpty { .turnAllowedPeer }
                else if !turnDeniedPeers.isEmpty { .turnDeniedPeer }
                else if !turnAlternates.isEmpty { .turnAlternate }
                else if turnAlternateDomain != nil { .turnAlternateDomain }
                else { nil }
            if let orphan {
                throw OptionError(subject: orphan.flag, problem: "TURN settings without a --turn listener do nothing; add --turn HOST:PORT")
            }
            return
        }
        if turnUsers.isEmpty && turnSecrets.isEmpty {
            throw OptionError(
                subject: "--turn \(first)",
                problem: "needs credentials: --turn-user, --turn-users-file or --turn-secret (TURN without authentication is an open relay)"
            )
        }
        var listeners = Set<HostPort>()
        for listener in turnListeners where !listeners.insert(listener).inserted {
            throw OptionError(subject: "--turn \(listener)", problem: "given twice; each listener once")
        }
        for rule in forwards where listeners.contains(rule.listen) {
            throw OptionError(subject: "--turn \(rule.listen)", problem: "is also the listen address of --forward \(rule); each UDP port serves one purpose")
        }
        var alternates = Set<TurnAlternateSpec>()
        for alternate in turnAlternates where !alternates.insert(alternate).inserted {
            throw OptionError(subject: "--turn-alternate \(alternate)", problem: "given twice; each alternate once")
        }
        var names = Set<String>()
        for user in turnUsers where !names.insert(user.name).inserted {
            throw OptionError(
                subject: "--turn-user",
                problem: "user \"\(OptionError.quoted(user.name))\" is given twice (flags, config or --turn-users-file); each name once"
            )
        }
    }
}
