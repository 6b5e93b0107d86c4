import Foundation
import Glibc

let command: ParsedCommand
do {
    command = try ServerOptions.parse(arguments: Array(CommandLine.arguments.dropFirst()),
                                      environment: ProcessInfo.processInfo.environment)
} catch {
    Log.writeStandardError(error.description + "\n")
    exit(error.exitCode)
}

switch command {
case .help(let text), .version(let text):
    print(text)
case .run(let options):
    exit(Server(options: options).run())
}
