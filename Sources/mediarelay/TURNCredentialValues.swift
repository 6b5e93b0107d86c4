/// One static TURN user (`--turn-user NAME:PASSWORD` or a line of `--turn-users-file`), for
/// RFC 8489 long-term credentials. `description` never shows the password: options end up in logs.
struct TURNUser: Equatable, Sendable, CustomStringConvertible {
    var name: String
    var password: String

    var description: String { "\(name):(password hidden)" }

    /// STUN's USERNAME is under 509 bytes (RFC 8489 section 14.3); a password has no limit in
    /// the RFC, this one keeps a typo'd file from being taken as a password.
    static let maxNameBytes = 508
    static let maxPasswordBytes = 1024
    static let accepted = "NAME:PASSWORD, NAME without \":\", both non-empty without control characters, NAME at most \(maxNameBytes) bytes"

    /// Splits at the first colon: a name has none (REST usernames `EXPIRY:USER` are told apart by
    /// it), a password may.
    init(parsing text: String) throws(ValueProblem) {
        guard let colon = text.firstIndex(of: ":") else { throw ValueProblem(expected: "expected \(TURNUser.accepted)") }
        let name = String(text[..<colon])
        let password = String(text[text.index(after: colon)...])
        guard !name.isEmpty, !password.isEmpty, name.utf8.count <= TURNUser.maxNameBytes,
            password.utf8.count <= TURNUser.maxPasswordBytes,
            !TURNUser.hasControlCharacter(name), !TURNUser.hasControlCharacter(password)
        else { throw ValueProblem(expected: "expected \(TURNUser.accepted)") }
        self.name = name
        self.password = password
    }

    init(name: String, password: String) {
        self.name = name
        self.password = password
    }

    static func hasControlCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Reads a users file: one `NAME:PASSWORD` per line (`CredentialFileLines`). A bad line is
    /// named by its number, never by its text, which holds a password.
    static func parseFile(_ text: String) throws(ValueProblem) -> [(line: Int, user: TURNUser)] {
        var users: [(line: Int, user: TURNUser)] = []
        for (number, line) in CredentialFileLines.of(text) {
            do throws(ValueProblem) {
                users.append((number, try TURNUser(parsing: String(line))))
            } catch {
                throw ValueProblem(expected: "line \(number): \(error.expected)")
            }
        }
        return users
    }
}

/// The lines of a file of credentials (`--turn-users-file`, `--turn-secret-file`) that hold
/// one: blank lines and lines whose first non-blank character is `#` are skipped; spaces and
/// tabs around a line are ignored (so a value cannot begin or end with one); CRLF line ends
/// are accepted. Each comes with its line number, which errors name instead of its text.
enum CredentialFileLines {
    static func of(_ text: String) -> [(number: Int, text: Substring)] {
        var lines: [(number: Int, text: Substring)] = []
        var number = 0
        // "\r\n" is one Character in Swift, so it is a separator of its own.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            let line = rawLine.trimmingBlanks()
            if line.isEmpty || line.hasPrefix("#") { continue }
            lines.append((number, line))
        }
        return lines
    }
}

/// A realm is sent in REALM (RFC 8489 section 14.9: under 128 characters) and hashed into
/// every long-term key, so it must be a fixed, printable string.
enum TURNRealm {
    static let accepted = "1 to 127 characters, no control characters or double quotes"

    static func check(_ text: String) throws(ValueProblem) -> String {
        guard !text.isEmpty, text.count < 128, !TURNUser.hasControlCharacter(text), !text.contains("\"") else {
            throw ValueProblem(expected: "expected \(accepted)")
        }
        return text
    }
}

extension Substring {
    /// The line without spaces, tabs and carriage returns at either end.
    fileprivate func trimmingBlanks() -> Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return self[first...last]
    }
}
