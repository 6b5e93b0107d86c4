import Foundation
import FuzzSupport
@testable import MediarelayInternals

/// The config file (`--config`): the input is the file's bytes, read and applied as the relay
/// does at start and on SIGHUP; options it accepts must pass their own validation.
func fuzzConfigFile(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let file = Data(FuzzInput(data, count).rest)
    let arguments = ["--config", "/fuzz/mediarelay.json"]
    guard case .run(let options)? = try? ServerOptions.parse(arguments: arguments, environment: [:], readFile: { _ in file }) else { return 0 }
    expect((try? options.validate()) != nil, "a config file accepted that fails validation")
    return 0
}
