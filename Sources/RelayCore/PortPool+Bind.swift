import SystemSupport
import Glibc

extension PortPool {
    /// Why `bindSkippingHeld` bound nothing.
    enum BindFailure: Error {
        /// No port left in the pool, or every port tried was held by another process.
        case exhausted
        /// Binding failed for another reason; the ports went back to the pool.
        case failed(SystemCallError)
    }

    /// Takes `width` consecutive ports at a time from the pool (`take` gives the first) and
    /// calls `bind` with the first: the one loop both session legs and TURN relayed sockets
    /// open their ports with. A port another process holds (EADDRINUSE) is skipped, up to
    /// `attempts` times; the skipped ones go back to the pool at the end, not at once, so the
    /// next take does not hand the same busy port out again. Any other error returns the
    /// ports and stops. `bind` must undo whatever it did before it throws.
    func bindSkippingHeld<Bound>(for purpose: Purpose, width: UInt16 = 1, attempts: Int = 16, take: () -> UInt16?,
                                 bind: (UInt16) throws(SystemCallError) -> Bound) -> Result<Bound, BindFailure> {
        var skipped: [UInt16] = []
        defer { for port in skipped { release(port, from: purpose) } }
        for _ in 0..<attempts {
            guard let base = take() else { return .failure(.exhausted) }
            do throws(SystemCallError) {
                return .success(try bind(base))
            } catch {
                let taken = (0..<width).map { base + $0 }
                guard error.errno == EADDRINUSE else {
                    for port in taken { release(port, from: purpose) }
                    return .failure(.failed(error))
                }
                skipped += taken
            }
        }
        return .failure(.exhausted)
    }
}
