import Foundation

/// The cases of the vendored JSONTestSuite: `y_*` documents every JSON reader must accept,
/// `n_*` documents it must reject.
///
/// Stateless; any thread.
public enum JSONTestSuite {
    /// `<repo>/../shared/jsonsuite`, where a clone sits beside `shared/`. The environment
    /// variable `RUNNEL_JSONSUITE` may point elsewhere (for a worktree that is not beside it).
    /// A missing directory fails the test: it must never pass by finding nothing.
    public static func directory() -> URL {
        if let override = ProcessInfo.processInfo.environment["RUNNEL_JSONSUITE"], !override.isEmpty {
            return URL(fileURLWithPath: override)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // RunnelTestSupport
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // the repository
            .appendingPathComponent("../shared/jsonsuite")
            .standardized
    }

    /// Every case, by file name, in name order.
    public static func cases() throws -> [(name: String, bytes: [UInt8])] {
        let directory = directory()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        return try names.filter { $0.hasSuffix(".json") }.sorted().map { name in
            (name, Array(try Data(contentsOf: directory.appendingPathComponent(name))))
        }
    }
}
