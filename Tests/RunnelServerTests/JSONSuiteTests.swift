import Foundation
import Testing

@testable import RunnelServer

/// Every case of the vendored JSONTestSuite: `y_*` must be accepted, `n_*` rejected, by the
/// validator, the parser and the request scanner's underlying grammar alike.
@Suite struct JSONSuiteTests {
    /// `<repo>/../shared/jsonsuite`, where a clone sits beside `shared/`. The environment
    /// variable `RUNNEL_JSONSUITE` may point elsewhere (for a worktree that is not beside it).
    /// A missing directory fails the test: it must never pass by finding nothing.
    static func suiteDirectory() -> URL {
        if let override = ProcessInfo.processInfo.environment["RUNNEL_JSONSUITE"], !override.isEmpty {
            return URL(fileURLWithPath: override)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // RunnelServerTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // the repository
            .appendingPathComponent("../shared/jsonsuite")
            .standardized
    }

    static func cases() throws -> [(name: String, bytes: [UInt8])] {
        let directory = suiteDirectory()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        return try names.filter { $0.hasSuffix(".json") }.sorted().map { name in
            (name, Array(try Data(contentsOf: directory.appendingPathComponent(name))))
        }
    }

    @Test func validatorAcceptsEveryYAndRejectsEveryN() throws {
        // Throws (and so fails) when the directory is missing.
        let cases = try Self.cases()
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
        let cases = try Self.cases()
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
        for item in try Self.cases() where item.name.hasPrefix("y_") {
            let value = try JSONParser().parse(item.bytes)
            let again = try JSONParser().parse(value.jsonBytes)
            if again != value { wrong.append(item.name) }
        }
        #expect(wrong.isEmpty, "changed by a round trip: \(wrong)")
    }
}
