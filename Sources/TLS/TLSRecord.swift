/// What a TLS record looks like from outside the library: enough to tell TLS from STUN on a
/// port's first byte, and to bound the ciphertext a write can produce.
///
/// On a stream the first byte of each protocol is distinct: a TLS connection opens with a
/// handshake record (content type 0x16), a STUN message with 0x00 or 0x01 (its top two bits
/// are zero), ChannelData with 0x40-0x4F (channel numbers 0x4000-0x4FFF).
public enum TLSRecord {
    /// Content type of a handshake record; a ClientHello is one.
    public static let handshakeContentType: UInt8 = 0x16
    /// Content type, version (2 bytes), length (2 bytes).
    public static let headerBytes = 5
    /// The largest plaintext the library puts in one record (its default max_send_fragment,
    /// the protocol's 2^14).
    public static let maximumPlaintextPerRecord = 16_384
    /// The most ciphertext one record adds to its plaintext, over every cipher suite
    /// OpenSSL 3 negotiates at TLS 1.2 or 1.3, with room to spare:
    /// header 5 + explicit CBC IV 16 + HMAC-SHA384 48 + CBC padding 16 (OpenSSL pads to the
    /// block, never more) = 85. TLS 1.3 needs 22 (header, inner content type, AEAD tag), TLS
    /// 1.2 AES-GCM 29, ChaCha20-Poly1305 21.
    public static let maximumOverheadPerRecord = 85
    /// Room kept free beyond the records for a post-handshake message the library may send
    /// before the data (a TLS 1.3 KeyUpdate answering the peer's is 27 bytes).
    public static let reservedBytes = 64

    /// Room the outgoing ciphertext buffer must have for a write of `plaintextBytes` to go
    /// out whole: `TLSSession.writePlaintext` refuses a write below it.
    public static func ciphertextBound(plaintextBytes: Int) -> Int {
        let records = max(1, (plaintextBytes + maximumPlaintextPerRecord - 1) / maximumPlaintextPerRecord)
        return plaintextBytes + records * maximumOverheadPerRecord + reservedBytes
    }

    /// Whether a stream whose first byte is `firstByte` could be TLS (a handshake record).
    /// Never true for STUN or ChannelData, so a plaintext TURN port can count TLS clients
    /// that came to the wrong port.
    public static func looksLikeTLS(firstByte: UInt8) -> Bool {
        firstByte == handshakeContentType
    }
}

/// The first three bytes a client sends, judged as they arrive (possibly one at a time):
/// content type 0x16, then protocol version 3.x with x at most 4 (SSL 3.0 to TLS 1.3: a
/// ClientHello's record version is 3.1 by convention, older clients may say 3.0).
struct ClientHelloPrefix {
    enum Verdict { case undecided, tls, notTLS }

    private(set) var verdict = Verdict.undecided
    /// The bytes judged so far (at most three), for the failure's detail.
    private(set) var seen: [UInt8] = []

    /// Looks at the start of `bytes`, the next bytes of the stream, until it can decide.
    mutating func inspect(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes {
            guard verdict == .undecided else { return }
            seen.append(byte)
            switch seen.count {
            case 1: if byte != TLSRecord.handshakeContentType { verdict = .notTLS }
            case 2: if byte != 0x03 { verdict = .notTLS }
            default: verdict = byte <= 0x04 ? .tls : .notTLS
            }
        }
    }
}
