import XCTest

final class mediarelayTestsPlaceholder: XCTestCase {}
