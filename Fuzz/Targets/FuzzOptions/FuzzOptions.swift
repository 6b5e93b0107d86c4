import Foundation
import FuzzSupport
@testable import MediarelayInternals

/// The relay's command line: the input cut at NUL bytes into arguments (as execve passes
/// them), parsed as `mediarelay` parses its own, with no config file to read. Whatever it
/// accepts must pass the checks the merged options are held to.
func fuzzOptions(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let arguments = FuzzInput(data, count).rest.split(separator: 0, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    let noFiles: (String) throws -> Data = { path in throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path]) }
    guard case .run(let options)? = try? ServerOptions.parse(arguments: arguments, environment: [:], readFile: noFiles) else { return 0 }
    expect((try? options.validate()) != nil, "options accepted that fail their own validation")
    return 0
}
