import Foundation
import Glibc

/// engine-bench's command line.
struct BenchOptions {
    static let defaultReference = ".build/reference/forwarder"
    var rates = [50_000, 200_000]
    var seconds = 2.0
    var repeats = 3
    var size = 200
    var output: String?
    /// The C reference forwarder; by default .build/reference/forwarder when it was built.
    var reference: String? = access(BenchOptions.defaultReference, X_OK) == 0 ? BenchOptions.defaultReference : nil

    static func parse(_ arguments: [String]) -> BenchOptions {
        var options = BenchOptions()
        var index = 0
        func value() -> String {
            index += 1
            guard index < arguments.count else { fail("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--rates": options.rates = value().split(separator: ",").map { number(String($0), "--rates") }
            case "--seconds":
                guard let seconds = Double(value()) else { fail("--seconds: expected a number") }
                options.seconds = seconds
            case "--repeats": options.repeats = number(value(), "--repeats")
            case "--size": options.size = number(value(), "--size")
            case "--out": options.output = value()
            case "--c-forwarder":
                let path = value()
                if path == "none" {
                    options.reference = nil
                } else {
                    guard access(path, X_OK) == 0 else { fail("--c-forwarder \(path): not an executable (make reference builds it)") }
                    options.reference = path
                }
            case "--help":
                print("engine-bench [--rates 50000,200000] [--seconds 2] [--repeats 3] [--size 200] [--out FILE.md] [--c-forwarder PATH|none]")
                exit(0)
            default: fail("unknown option \(arguments[index])")
            }
            index += 1
        }
        guard options.repeats >= 1, options.seconds > 0, (1...1472).contains(options.size),
              options.rates.allSatisfy({ (1...2_000_000).contains($0) }) else { fail("values out of range") }
        return options
    }
}

func number(_ text: String, _ option: String) -> Int {
    guard let value = Int(text) else { fail("\(option) \(text): expected an integer") }
    return value
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("engine-bench: \(message)\n".utf8))
    exit(2)
}
