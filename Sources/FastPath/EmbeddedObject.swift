/// The bytes of an ELF object that BPFEmbed wrote as hex digits at build time.
enum EmbeddedObject {
    static func bytes(_ hex: StaticString) -> [UInt8] {
        hex.withUTF8Buffer { text in
            var bytes = [UInt8]()
            bytes.reserveCapacity(text.count / 2)
            var high: UInt8?
            for character in text {
                let value: UInt8
                switch character {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
                default: continue
                }
                if let first = high {
                    bytes.append(first << 4 | value)
                    high = nil
                } else {
                    high = value
                }
            }
            precondition(high == nil, "an embedded BPF object has an odd number of hex digits")
            return bytes
        }
    }
}
