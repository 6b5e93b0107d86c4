import CSSL

/// OpenSSL's error queue for the calling thread, read and emptied in one step.
///
/// The queue is per thread and outlives the call that filled it: an entry left behind would
/// make `SSL_get_error` report the next connection on this worker as failed. So every call
/// that failed is followed by `take()` (or `clear()`), and nothing is left for the next one.
enum ErrorQueue {
    /// One queued error: OpenSSL's packed code and its reason text ("no start line").
    struct Entry {
        let code: UInt

        var library: Int32 { ERR_GET_LIB(code) }
        var reason: Int32 { ERR_GET_REASON(code) }
        var text: String {
            ERR_reason_error_string(code).map { String(cString: $0) } ?? "error \(String(code, radix: 16))"
        }
    }

    /// Every queued error, oldest first; the queue is empty afterwards.
    static func take() -> [Entry] {
        var entries: [Entry] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            entries.append(Entry(code: code))
        }
        ERR_clear_error()
        return entries
    }

    static func clear() {
        ERR_clear_error()
    }

    /// Empties the queue if anything is in it, before a call whose failure `SSL_get_error`
    /// will judge: that function reads the queue, so an entry left by other code on this
    /// thread would turn a WANT_READ into a failure. Peeking first keeps the data path to a
    /// thread-local read.
    static func clearStale() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// The reasons of `entries` in one line ("no start line; unsupported"), each once, or a
    /// fallback when the library queued nothing.
    static func summary(_ entries: [Entry]) -> String {
        var texts: [String] = []
        for entry in entries where !texts.contains(entry.text) { texts.append(entry.text) }
        return texts.isEmpty ? "no reason given by OpenSSL" : texts.joined(separator: "; ")
    }
}
