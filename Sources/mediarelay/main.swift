import Foundation
import Glibc
import SystemSupport

// Before any worker thread starts: see HeapTrim.
HeapTrim.useOneArena()
let arguments = Array(CommandLine.arguments.dropFirst())
let environment = ProcessInfo.processInfo.environment
let command: ParsedCommand
do {
    command = try ServerOptions.parse(arguments: arguments, environment: environment)
} catch {
    Log.emit(error.description + "\n")
    exit(error.exitCode)
}

switch command {
case .help(let text), .version(let text):
    print(text)
case .run(let options):
    exit(Server(options: options, arguments: arguments, environment: environment).run())
}
