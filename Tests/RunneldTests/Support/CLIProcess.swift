import Foundation
import RunnelTestSupport

/// What a finished `runnel` run left behind.
struct CLIResult: CustomStringConvertible {
    let status: Int32
    let stdout: String
    let stderr: String

    var stdoutLines: [String] {
        stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    var description: String { "status \(status)\nstdout: \(stdout.prefix(2000))\nstderr: \(stderr.prefix(2000))" }
}

/// One run of the built `runnel` binary with chosen arguments, stdin and environment.
///
/// stdin comes from a file (the given text written to a temporary file, or /dev/null), and
/// stdout and stderr go to temporary files, so a run of any size can neither block on a full
/// pipe nor need a reader thread; a test reads the output files while the process runs (for
/// `sub`) or after it ends. `RUNNEL_SERVER` and `RUNNEL_TOKEN` are removed from the inherited
/// environment unless given. Owned by one test; the process is killed and reaped on deinit and
/// its directory removed.
final class CLIProcess {
    static let defaultTimeout: Duration = .seconds(30)

    let pid: pid_t
    let arguments: [String]
    private let directory: String
    private var exitStatus: Int32?

    /// Starts `runnel arguments...`.
    init(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws {
        self.arguments = arguments
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("runnel-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var stdinPath = "/dev/null"
        if let stdin {
            stdinPath = directory + "/stdin"
            try Data(stdin.utf8).write(to: URL(fileURLWithPath: stdinPath))
        }
        var env = ProcessInfo.processInfo.environment
        env["RUNNEL_SERVER"] = nil
        env["RUNNEL_TOKEN"] = nil
        env.merge(environment) { _, new in new }
        let executable = try CLIProcess.binaryPath()
        let outputDirectory = directory
        let written = O_WRONLY | O_CREAT | O_TRUNC
        pid = try ChildProcess.spawnLock.withLock {
            try ChildProcess.spawn(
                executable, arguments, environment: env, stdin: .file(stdinPath, flags: O_RDONLY),
                stdout: .file(outputDirectory + "/stdout", flags: written),
                stderr: .file(outputDirectory + "/stderr", flags: written))
        }
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `runnel arguments...` to completion.
    static func run(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
        timeout: Duration = CLIProcess.defaultTimeout
    ) throws -> CLIResult {
        let process = try CLIProcess(arguments, stdin: stdin, environment: environment)
        let status = try process.waitForExit(timeout: timeout)
        return CLIResult(status: status, stdout: process.stdout, stderr: process.stderr)
    }

    /// Everything written to stdout so far.
    var stdout: String { read("stdout") }
    var stderr: String { read("stderr") }

    /// The complete stdout lines written so far.
    var stdoutLines: [String] {
        stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// Waits until stdout holds at least `count` complete lines; returns them, or nil at the
    /// deadline.
    func waitForLines(_ count: Int, timeout: Duration = .seconds(10)) -> [String]? {
        eventually(timeout: timeout) {
            let lines = stdoutLines
            return lines.count >= count ? lines : nil
        }
    }

    func signal(_ signal: Int32) {
        if exitStatus == nil { Glibc.kill(pid, signal) }
    }

    /// The exit status (128 + N after signal N); throws when still running at the deadline.
    func waitForExit(timeout: Duration = CLIProcess.defaultTimeout) throws -> Int32 {
        let deadline = Deadline(timeout)
        while true {
            if let status = reap() { return status }
            if deadline.hasPassed {
                throw HarnessError.timeout("runnel \(arguments) still running; stderr: \(stderr)")
            }
            pollPause(.milliseconds(5))
        }
    }

    func kill() {
        guard exitStatus == nil, reap() == nil else { return }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        exitStatus = ChildProcess.exitStatus(status)
    }

    private func reap() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        exitStatus = ChildProcess.exitStatus(status)
        return exitStatus
    }

    private func read(_ name: String) -> String {
        (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? ""
    }

    /// The `runnel` built next to `runneld` (the test target depends on both); `RUNNEL_PATH`
    /// overrides.
    static func binaryPath() throws -> String {
        if let override = ProcessInfo.processInfo.environment["RUNNEL_PATH"] { return override }
        let path = URL(fileURLWithPath: try RunneldBinary.path()).deletingLastPathComponent()
            .appendingPathComponent("runnel").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw HarnessError.launch("no runnel executable at \(path)")
        }
        return path
    }
}
