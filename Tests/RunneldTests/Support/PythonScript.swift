import Foundation
import Testing

/// One check of a Python test script, a parameterized test's argument: the script (a path in
/// the repository) and the check's name as the script's `--list` prints it (`SUITE.FUNCTION`).
///
/// Thread rules: an immutable value. Lifetime rule: one test case's argument.
struct PythonCheck: Sendable, CustomTestStringConvertible {
    let script: String
    let name: String
    /// Why the script could not list its checks; set only on the one stand-in check then.
    var listingFailure: String?

    var testDescription: String { name }
}

/// The Python test scripts as Swift tests (scripts/runneld_process.py is their harness): the
/// checks a script lists become one test case each, and the script runs once for all of them,
/// its daemons shared by its checks as the script arranges; each case then reports its own
/// check's result, with the check's output when it failed.
///
/// Thread rules: any thread; a script's one run is shared through `PythonScriptRuns`.
/// Lifetime rule: a run's results live until the test process ends.
enum PythonScript {
    /// How long a script may run before its harness stops it (`--timeout`: its daemons stop
    /// too) and its checks without a result fail. Past `runTimeout` and a grace, the process
    /// started is sent SIGTERM (it may be an interpreter's launcher, such as pyenv's, rather
    /// than the interpreter: hence the harness's own timeout first).
    static let runTimeout: Duration = .seconds(180)

    /// The checks of `script`, read by `--list` when the tests are planned. A script that cannot
    /// list them gives one stand-in check whose test fails with the script's output.
    static func checks(_ script: String) -> [PythonCheck] {
        let (status, output, _) = run(script, ["--list"], timeout: .seconds(60))
        let names = output.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        guard status == 0, !names.isEmpty else {
            return [PythonCheck(script: script, name: "--list", listingFailure: "exit status \(status):\n\(output)")]
        }
        return names.map { PythonCheck(script: script, name: $0) }
    }

    /// Reports `check`'s result as the current test's: nothing when it passed, an issue with
    /// its output when it failed or the script said nothing of it.
    static func expectPasses(_ check: PythonCheck) async {
        if let listingFailure = check.listingFailure {
            Issue.record("\(check.script) --list failed: \(listingFailure)")
            return
        }
        let run = await PythonScriptRuns.shared.run(of: check.script).value
        guard let result = run.results[check.name] else {
            let tail = run.output.split(separator: "\n", omittingEmptySubsequences: false).suffix(60)
            Issue.record(
                """
                \(check.script) reported nothing of \(check.name) (exit status \(run.status)); its output ends:
                \(tail.joined(separator: "\n"))
                """)
            return
        }
        if !result.ok {
            Issue.record("\(check.script) \(check.name) failed after \(result.seconds) s:\n\(result.output)")
        } else if run.status != 0 && !run.results.values.contains(where: { !$0.ok }) && run.isLast(check.name) {
            // A failure no check owns (the harness's own) shows on the script's last check.
            Issue.record("\(check.script) exited with status \(run.status), every check passing:\n\(run.output)")
        }
    }

    /// Runs the whole script with `--results`; blocks its thread until the script ends.
    fileprivate static func runAll(_ script: String) -> PythonScriptRun {
        let resultsPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("python-checks-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: resultsPath) }
        var arguments = ["--results", resultsPath, "--timeout", "\(runTimeout.components.seconds)"]
        var failure = ""
        do { arguments += ["--runneld", try RunneldBinary.path()] } catch { failure = "\(error)\n" }
        let (status, output, note) = run(script, arguments, timeout: runTimeout + .seconds(30))
        var results: [String: PythonScriptRun.Result] = [:]
        var names: [String] = []
        let lines = (try? String(contentsOfFile: resultsPath, encoding: .utf8)) ?? ""
        for line in lines.split(separator: "\n") {
            guard let result = try? JSONDecoder().decode(PythonScriptRun.Result.self, from: Data(line.utf8)) else {
                continue
            }
            results[result.name] = result
            names.append(result.name)
        }
        return PythonScriptRun(
            status: status, output: failure + note + output, results: results, lastName: names.last)
    }

    /// Runs `python3 script arguments` from the repository's root, stdout and stderr together;
    /// past `timeout` it is sent SIGTERM. Returns the exit status, the output and a note when
    /// the timeout stopped it.
    private static func run(_ script: String, _ arguments: [String], timeout: Duration)
        -> (status: Int32, output: String, note: String)
    {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { root.deleteLastPathComponent() }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("python-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: output.path, contents: nil),
            let handle = try? FileHandle(forWritingTo: output)
        else { return (-1, "", "cannot make an output file at \(output.path)\n") }
        defer {
            try? handle.close()
            try? FileManager.default.removeItem(at: output)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent(script).path] + arguments
        process.currentDirectoryURL = root
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = handle
        process.standardError = handle
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        do { try process.run() } catch { return (-1, "", "\(script) did not start: \(error)\n") }
        var note = ""
        let seconds = Double(timeout.components.seconds)
        if ended.wait(timeout: .now() + seconds) == .timedOut {
            note = "\(script) ran past \(Int(seconds)) s and was stopped\n"
            process.terminate()
            ended.wait()
        }
        return (process.terminationStatus, (try? String(contentsOf: output, encoding: .utf8)) ?? "", note)
    }
}

/// What one run of a script reported: each check's result (its `--results` lines), the exit
/// status and the whole output.
///
/// Thread rules: an immutable value. Lifetime rule: kept by `PythonScriptRuns` for the test run.
struct PythonScriptRun: Sendable {
    /// One `--results` line.
    struct Result: Decodable, Sendable {
        let name: String
        let ok: Bool
        let seconds: Double
        let output: String
    }

    let status: Int32
    let output: String
    let results: [String: Result]
    let lastName: String?

    func isLast(_ name: String) -> Bool { lastName == name }
}

/// Each script's one run, started by the first of its checks' test cases that asks.
///
/// Thread rules: an actor. Lifetime rule: one for the test process.
actor PythonScriptRuns {
    static let shared = PythonScriptRuns()
    private var runs: [String: Task<PythonScriptRun, Never>] = [:]

    /// The run of `script`, started now if no case asked before. It waits on a thread of
    /// Dispatch's rather than of the Swift concurrency pool, so the scripts run side by side
    /// (as the one synchronous test per script they replace did) without holding the pool.
    func run(of script: String) -> Task<PythonScriptRun, Never> {
        if let run = runs[script] { return run }
        let run = Task {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: PythonScript.runAll(script)) }
            }
        }
        runs[script] = run
        return run
    }
}
