import NetAddress
import SystemSupport

extension SystemCallError {
    /// An error about a call on `address`.
    init(_ operation: String, errno: Int32, address: Endpoint, advice: String? = nil) {
        self.init(operation, errno: errno, address: address.description, advice: advice)
    }
}
