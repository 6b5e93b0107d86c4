import Glibc
import SystemSupport

/// "connection refused (ECONNREFUSED)": the same text the relay's own errors use.
package func errnoText(_ code: Int32) -> String {
    SystemCallError.explain(code)
}

/// The text of a failed call's errno.
package func errnoText(_ outcome: CallOutcome) -> String {
    switch outcome {
    case .failed(let code): errnoText(code)
    case .wouldBlock: errnoText(EAGAIN)
    case .done: "no error"
    }
}
