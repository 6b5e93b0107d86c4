import Foundation

// BPFEmbed OBJECT SWIFT NAME: writes SWIFT, a Swift file declaring `enum NAME` whose `bytes`
// is the ELF object OBJECT, so the BPF program travels inside the binary that loads it (no
// path to find at run time, no object code committed). Hex in a string literal: a byte array
// literal of this size takes the type checker far longer.
let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: BPFEmbed OBJECT SWIFT NAME\n".utf8))
    exit(2)
}
let object = try Data(contentsOf: URL(fileURLWithPath: arguments[1]))
let digits = Array("0123456789abcdef".utf8)
var hex = [UInt8]()
hex.reserveCapacity(object.count * 2 + object.count / 32)
for (index, byte) in object.enumerated() {
    if index > 0 && index % 64 == 0 { hex.append(UInt8(ascii: "\n")) }
    hex.append(digits[Int(byte >> 4)])
    hex.append(digits[Int(byte & 0x0f)])
}
let source = """
// Generated at build time by BPFEmbed from \(URL(fileURLWithPath: arguments[1]).lastPathComponent); not committed.
enum \(arguments[3]) {
    /// The ELF object as hex digits, 64 bytes a line.
    static let hex: StaticString = \"\"\"
\(String(decoding: hex, as: UTF8.self))
\"\"\"
}

"""
try Data(source.utf8).write(to: URL(fileURLWithPath: arguments[2]), options: .atomic)
