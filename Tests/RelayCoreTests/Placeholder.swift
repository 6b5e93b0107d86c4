import XCTest

final class RelayCoreTestsPlaceholder: XCTestCase {}
