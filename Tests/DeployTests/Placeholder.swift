import XCTest

final class DeployTestsPlaceholder: XCTestCase {}
