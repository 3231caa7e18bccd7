import Foundation
import Testing

/// The HTTP front door against real runneld processes, driven by `scripts/http-tests.py`
/// with httpx, an HTTP client no one here wrote (and raw sockets for what no well-behaved
/// client sends). The script starts its own daemons, on free ports, with the configurations it
/// needs; one of its checks waits out the 10-second head limit.
@Suite struct HTTPFrontDoorTests {
    @Test(.timeLimit(.minutes(2))) func theContractsChecksPass() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("http-tests-\(UUID().uuidString)")
        #expect(FileManager.default.createFile(atPath: output.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", root.appendingPathComponent("scripts/http-tests.py").path, "--runneld", try RunneldBinary.path(),
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        let report = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "scripts/http-tests.py:\n\(report)")
    }
}
