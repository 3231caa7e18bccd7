import RunnelTestSupport
import Testing

@testable import RunnelJSON

/// Every case of the vendored JSONTestSuite: `y_*` must be accepted, `n_*` rejected, by the
/// validator, the parser and the request scanner's underlying grammar alike.
@Suite struct JSONSuiteTests {
    @Test func validatorAcceptsEveryYAndRejectsEveryN() throws {
        // Throws (and so fails) when the directory is missing.
        let cases = try JSONTestSuite.cases()
        let accepted = cases.filter { $0.name.hasPrefix("y_") }
        let rejected = cases.filter { $0.name.hasPrefix("n_") }
        #expect(accepted.count >= 95)
        #expect(rejected.count >= 188)
        let validator = JSONValidator()
        var wrong: [String] = []
        for item in accepted where !validator.isValid(item.bytes.withUnsafeBytes { $0 }) { wrong.append(item.name) }
        for item in rejected where item.bytes.withUnsafeBytes({ validator.isValid($0) }) { wrong.append(item.name) }
        #expect(wrong.isEmpty, "misjudged: \(wrong)")
    }

    @Test func parserAgreesWithValidator() throws {
        let cases = try JSONTestSuite.cases()
        #expect(!cases.isEmpty)
        var wrong: [String] = []
        for item in cases {
            let parsed: Bool
            do {
                _ = try JSONParser().parse(item.bytes)
                parsed = true
            } catch {
                parsed = false
            }
            if parsed != item.name.hasPrefix("y_") { wrong.append(item.name) }
        }
        #expect(wrong.isEmpty, "misjudged: \(wrong)")
    }

    /// Each accepted case survives parse → encode → parse unchanged.
    @Test func acceptedCasesRoundTrip() throws {
        var wrong: [String] = []
        for item in try JSONTestSuite.cases() where item.name.hasPrefix("y_") {
            let value = try JSONParser().parse(item.bytes)
            let again = try JSONParser().parse(value.jsonBytes)
            if again != value { wrong.append(item.name) }
        }
        #expect(wrong.isEmpty, "changed by a round trip: \(wrong)")
    }
}
