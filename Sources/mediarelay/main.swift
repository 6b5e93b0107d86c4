import Foundation
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
let environment = ProcessInfo.processInfo.environment
let command: ParsedCommand
do {
    command = try ServerOptions.parse(arguments: arguments, environment: environment)
} catch {
    var line = Array((error.description + "\n").utf8)
    _ = write(2, &line, line.count)
    exit(error.exitCode)
}

switch command {
case .help(let text), .version(let text):
    print(text)
case .run(let options):
    exit(Server(options: options, arguments: arguments, environment: environment).run())
}
