import XCTest

final class RelayHTTPTestsPlaceholder: XCTestCase {}
