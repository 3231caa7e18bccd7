import Foundation

/// Finds the `runneld` executable built for this test run.
///
/// SwiftPM builds it into the same directory as the test binary because the test target depends
/// on it. `RUNNELD_PATH` overrides the search.
enum RunneldBinary {
    static func path(filePath: String = #filePath) throws -> String {
        let candidates = searchPaths(filePath: filePath)
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw HarnessError.launch("no runneld executable; looked at \(candidates)")
    }

    static func searchPaths(filePath: String) -> [String] {
        var paths: [String] = []
        if let override = ProcessInfo.processInfo.environment["RUNNELD_PATH"] { paths.append(override) }
        if let running = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            paths.append(sibling(of: running))
        }
        if let argument = CommandLine.arguments.first { paths.append(sibling(of: argument)) }
        if let executable = Bundle.main.executablePath { paths.append(sibling(of: executable)) }
        // Tests/RunneldTests/Support/RunneldBinary.swift -> package root.
        var root = URL(fileURLWithPath: filePath)
        for _ in 0..<4 { root.deleteLastPathComponent() }
        paths.append(root.appendingPathComponent(".build/debug/runneld").path)
        paths.append(root.appendingPathComponent(".build/release/runneld").path)
        return paths
    }

    private static func sibling(of executable: String) -> String {
        URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("runneld").path
    }
}
