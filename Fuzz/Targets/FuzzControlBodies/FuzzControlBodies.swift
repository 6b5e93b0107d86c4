import FuzzSupport
@testable import MediarelayInternals
import RelayCore
import RelayHTTP

/// The control API's JSON bodies: POST /v1/sessions read as the relay reads it (`SessionJSON`),
/// and `JSONObjectReader`'s accessors over whatever keys the body has. A request it accepts
/// must hold only values the relay can act on.
func fuzzControlBodies(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let body = Array(FuzzInput(data, count).rest)
    if let request = try? SessionJSON.request(from: body, defaults: MarkingPolicy(), idleTimeout: 30) {
        expect(SessionRequest.legRange.contains(request.legs), "a session of \(request.legs) legs accepted")
        expect(request.idleTimeoutSeconds >= 1, "an idle timeout of \(request.idleTimeoutSeconds) s accepted")
        expect(request.allowedSources.count <= 64, "\(request.allowedSources.count) allowed sources accepted")
    }
    guard let reader = try? JSONObjectReader(body) else { return 0 }
    for key in reader.object.keys {
        _ = try? reader.int(key, range: 0...100)
        _ = try? reader.int(key)
        _ = try? reader.bool(key)
        _ = try? reader.string(key, oneOf: ["on", "off"])
        _ = try? reader.string(key)
        _ = try? reader.stringArray(key)
    }
    return 0
}
