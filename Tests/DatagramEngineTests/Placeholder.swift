import XCTest
final class DatagramEngineTestsPlaceholder: XCTestCase {}
