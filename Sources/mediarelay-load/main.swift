import ClientSockets
import Foundation
import Glibc
import LoadComparison
import LoadGen

// mediarelay-load: see `helpText` (LoadGen/HelpText.swift) and docs/ARCHITECTURE.md.

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("mediarelay-load: \(message)\n".utf8))
    exit(code)
}

let log: @Sendable (String) -> Void = { FileHandle.standardError.write(Data("mediarelay-load: \($0)\n".utf8)) }

// A SIGINT only sets a flag; the run loop sees it, stops sending and deletes its sessions.
signal(SIGINT) { _ in interruptRequested.store(true, ordering: .relaxed) }
signal(SIGPIPE, SIG_IGN)
// Thousands of streams mean thousands of sockets, for us and for the relay we may start.
raiseOpenFileLimit()

let command: LoadCommand
do {
    command = try OptionParser.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    fail(error.message, code: 2)
}

switch command {
case .help:
    print(helpText)
case .run(let options):
    let result: LoadResult
    do {
        result = try LoadRun(options: options, log: log).run()
    } catch {
        fail(error.message, code: 2)
    }
    if options.json {
        print(result.json.rendered)
    } else {
        print(ResultTable.render(result))
    }
    // The partial result is printed; the status still tells a script the run was cut short.
    if interruptRequested.load(ordering: .relaxed) { exit(130) }
case .compare(let options):
    do {
        try Comparison(options: options, log: log).run()
    } catch {
        fail(error.message, code: error.message.hasPrefix("--") ? 2 : 1)
    }
}
