import XCTest

final class LoadGenTestsPlaceholder: XCTestCase {}
