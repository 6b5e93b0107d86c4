import Foundation

/// The `--turn-users-file` reader: the file is read once at start, through the same bounded
/// reader as the config file, and every user is checked like a `--turn-user` value.
enum TURNUsersFile {
    static let expected = "a readable text file of NAME:PASSWORD lines"

    /// The file's users after `given` (those of `--turn-user` or the config, named `givenBy`
    /// in an error); a name given twice is named with both of its places.
    static func load(path: String, after given: [TURNUser], givenBy: String,
                     readFile: (String) throws -> Data) throws(OptionError) -> [TURNUser] {
        let subject = "--turn-users-file \(OptionError.quoted(path))"
        let text = try CredentialFile.text(path, subject: subject, expected: expected, readFile: readFile)
        let users: [(line: Int, user: TURNUser)]
        do throws(ValueProblem) {
            users = try TURNUser.parseFile(text)
        } catch {
            throw OptionError(subject: subject, problem: error.expected)
        }
        let earlier = Set(given.map(\.name))
        var lines: [String: Int] = [:]
        for (line, user) in users {
            let name = "user \"\(OptionError.quoted(user.name))\""
            if let first = lines[user.name] {
                throw OptionError(subject: subject, problem: "line \(line): \(name) is on line \(first) too; each name once")
            }
            if earlier.contains(user.name) {
                throw OptionError(subject: subject, problem: "line \(line): \(name) is given by \(givenBy) too; each name once")
            }
            lines[user.name] = line
        }
        return users.map(\.user)
    }
}

/// The `--turn-secret-file` reader: one REST secret a line (`CredentialFileLines`), each
/// checked like a `--turn-secret` value; a bad line is named by its number, never its text.
enum TURNSecretFile {
    static func load(path: String, readFile: (String) throws -> Data) throws(OptionError) -> [String] {
        let subject = "--turn-secret-file \(OptionError.quoted(path))"
        let text = try CredentialFile.text(path, subject: subject, expected: "a readable text file of secrets, one a line",
                                           readFile: readFile)
        var secrets: [String] = []
        for (number, line) in CredentialFileLines.of(text) {
            do throws(ValueProblem) {
                secrets.append(try OptionKey.visibleASCII(String(line), expected: OptionKey.turnSecretFile.accepted))
            } catch {
                throw OptionError(subject: subject, problem: "line \(number): \(error.expected)")
            }
        }
        guard !secrets.isEmpty else {
            throw OptionError(subject: subject, problem: "holds no secret (only blank and # lines); expected one secret a line")
        }
        return secrets
    }
}

/// A file of credentials read as UTF-8 text through the config file's bounded reader.
enum CredentialFile {
    static func text(_ path: String, subject: String, expected: String, readFile: (String) throws -> Data) throws(OptionError) -> String {
        let data = try ConfigFile.readSmallFile(path, subject: subject, expected: expected, readFile: readFile)
        guard let text = String(data: data, encoding: .utf8) else {
            throw OptionError(subject: subject, problem: "not UTF-8 text; expected \(expected)")
        }
        return text
    }
}
