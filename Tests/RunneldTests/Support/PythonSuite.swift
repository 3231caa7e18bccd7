import Foundation
import Testing

/// One check of a black-box suite file, a parameterized test's argument: the file (a path in the
/// repository, `Tests/blackbox/test_http.py`) and the check's pytest node id as `--collect-only
/// -q` lists it (`test_http.py::TestMain::test_auth`).
///
/// Thread rules: an immutable value. Lifetime rule: one test case's argument.
struct PythonCheck: Sendable, CustomTestStringConvertible {
    let file: String
    let name: String
    /// Why pytest could not collect the file's checks; set only on the one stand-in check then.
    var listingFailure: String?

    var testDescription: String { name }
}

/// The black-box suites (Tests/blackbox, run by pytest; their conftest.py starts the daemons
/// through runneld_process.py) as Swift tests: the checks pytest collects from a file become one
/// test case each, and pytest runs the file once for all of them, its daemons shared by its
/// checks as the file's suites (test classes) arrange; each case then reports its own check's
/// result, with the check's output when it failed.
///
/// Thread rules: any thread; the one collection is a static constant (made once, by the first
/// thread that asks), a file's one run is shared through `PythonSuiteRuns`. Lifetime rule: the
/// collection and a run's results live until the test process ends.
enum PythonSuite {
    /// How long a file may run before conftest.py stops it (`--stop-after`: its daemons stop too)
    /// and its checks without a result fail. Past `runTimeout` and a grace, the process started is
    /// sent SIGTERM (it may be an interpreter's launcher, such as pyenv's, rather than the
    /// interpreter: hence pytest's own stop first).
    static let runTimeout: Duration = .seconds(180)

    /// The folder of the suite files, in the repository.
    static let folder = "Tests/blackbox"

    /// What pytest collected from every file of `folder` (`--collect-only -q`), in one run when
    /// the first file's tests are planned rather than a run per file: its exit status and output,
    /// whose lines name the checks (pytest node ids, each starting with its file's name), then a
    /// summary and any collection errors.
    private static let collected = pytest(
        folder, ["--collect-only", "-q", "--continue-on-collection-errors"],
        timeout: .seconds(60))

    /// The checks of `file` (a file of `folder`), collected by pytest when the tests are planned.
    /// A file whose checks cannot be collected gives one stand-in check whose test fails with
    /// pytest's output.
    static func checks(_ file: String) -> [PythonCheck] {
        let (status, output, _) = collected
        let prefix = URL(fileURLWithPath: file).lastPathComponent + "::"
        let names = output.split(separator: "\n").map(String.init).filter { $0.hasPrefix(prefix) }
        guard !names.isEmpty else {
            return [
                PythonCheck(file: file, name: "--collect-only", listingFailure: "exit status \(status):\n\(output)")
            ]
        }
        return names.map { PythonCheck(file: file, name: $0) }
    }

    /// Reports `check`'s result as the current test's: nothing when it passed, an issue with
    /// its output when it failed or pytest said nothing of it.
    static func expectPasses(_ check: PythonCheck) async {
        if let listingFailure = check.listingFailure {
            Issue.record("pytest --collect-only \(folder) listed nothing of \(check.file): \(listingFailure)")
            return
        }
        let run = await PythonSuiteRuns.shared.run(of: check.file).value
        guard let result = run.results[check.name] else {
            let tail = run.output.split(separator: "\n", omittingEmptySubsequences: false).suffix(60)
            Issue.record(
                """
                pytest \(check.file) reported nothing of \(check.name) (exit status \(run.status)); its output ends:
                \(tail.joined(separator: "\n"))
                """)
            return
        }
        if !result.ok {
            Issue.record("\(folder)/\(check.name) failed after \(result.seconds) s:\n\(result.output)")
        } else if run.status != 0 && !run.results.values.contains(where: { !$0.ok }) && run.isLast(check.name) {
            // A failure no check owns (pytest's, or conftest.py's) shows on the file's last check.
            Issue.record("pytest \(check.file) exited with status \(run.status), every check passing:\n\(run.output)")
        }
    }

    /// Runs every check of `file` with conftest.py's `--results`; blocks its thread until pytest
    /// ends.
    fileprivate static func runAll(_ file: String) -> PythonSuiteRun {
        let resultsPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("python-checks-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: resultsPath) }
        var arguments = ["-v", "--results", resultsPath, "--stop-after", "\(runTimeout.components.seconds)"]
        var failure = ""
        do { arguments += ["--runneld", try RunneldBinary.path()] } catch { failure = "\(error)\n" }
        let (status, output, note) = pytest(file, arguments, timeout: runTimeout + .seconds(30))
        var results: [String: PythonSuiteRun.Result] = [:]
        var names: [String] = []
        let lines = (try? String(contentsOfFile: resultsPath, encoding: .utf8)) ?? ""
        for line in lines.split(separator: "\n") {
            guard let result = try? JSONDecoder().decode(PythonSuiteRun.Result.self, from: Data(line.utf8)) else {
                continue
            }
            results[result.name] = result
            names.append(result.name)
        }
        return PythonSuiteRun(
            status: status, output: failure + note + output, results: results, lastName: names.last)
    }

    /// Runs `python3 -m pytest path arguments` (a file or a folder) from the repository's root,
    /// stdout and stderr together, with no cache (the files run side by side) and no plugin but the suites' own
    /// conftest.py (none installed beside pytest is loaded, nor its start-up paid); past `timeout`
    /// it is sent SIGTERM. Returns the exit status, the output and a note when the timeout
    /// stopped it.
    private static func pytest(_ path: String, _ arguments: [String], timeout: Duration)
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
        process.arguments =
            ["python3", "-m", "pytest", "-p", "no:cacheprovider", root.appendingPathComponent(path).path] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"]) {
            _, ours in ours
        }
        process.currentDirectoryURL = root
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = handle
        process.standardError = handle
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        do { try process.run() } catch { return (-1, "", "pytest \(path) did not start: \(error)\n") }
        var note = ""
        let seconds = Double(timeout.components.seconds)
        if ended.wait(timeout: .now() + seconds) == .timedOut {
            note = "pytest \(path) ran past \(Int(seconds)) s and was stopped\n"
            process.terminate()
            ended.wait()
        }
        return (process.terminationStatus, (try? String(contentsOf: output, encoding: .utf8)) ?? "", note)
    }
}

/// What one run of a file reported: each check's result (its `--results` lines), the exit status
/// and the whole output.
///
/// Thread rules: an immutable value. Lifetime rule: kept by `PythonSuiteRuns` for the test run.
struct PythonSuiteRun: Sendable {
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

/// Each file's one run, started by the first of its checks' test cases that asks.
///
/// Thread rules: an actor. Lifetime rule: one for the test process.
actor PythonSuiteRuns {
    static let shared = PythonSuiteRuns()
    private var runs: [String: Task<PythonSuiteRun, Never>] = [:]

    /// The run of `file`, started now if no case asked before. It waits on a thread of
    /// Dispatch's rather than of the Swift concurrency pool, so the files run side by side
    /// (as the one synchronous test per file they replace did) without holding the pool.
    func run(of file: String) -> Task<PythonSuiteRun, Never> {
        if let run = runs[file] { return run }
        let run = Task {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: PythonSuite.runAll(file)) }
            }
        }
        runs[file] = run
        return run
    }
}
