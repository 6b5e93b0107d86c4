import Foundation
import FuzzSupport
@testable import MediarelayInternals

/// The TURN users file (`--turn-users-file`, NAME:PASSWORD a line): the input is the file,
/// read as the relay reads it at start. Every user it accepts must be one the relay could sign
/// a key for: a name and a password without control characters, as `--turn-user` requires.
func fuzzUsersFile(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let file = Data(FuzzInput(data, count).rest)
    let arguments = ["--turn", "127.0.0.1:3478", "--turn-realm", "fuzz.test", "--turn-users-file", "/fuzz/users"]
    guard case .run(let options)? = try? ServerOptions.parse(arguments: arguments, environment: [:], readFile: { _ in file }) else { return 0 }
    for user in options.turnUsers {
        expect(!TURNUser.hasControlCharacter(user.name) && !TURNUser.hasControlCharacter(user.password),
               "a user with a control character accepted")
        expect(!user.name.isEmpty && !user.password.isEmpty && !user.name.contains(":"), "a user without a name or a password accepted")
        expect(user.name.utf8.count <= TURNUser.maxNameBytes, "a name longer than USERNAME allows accepted")
    }
    return 0
}
