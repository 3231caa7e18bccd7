import Foundation
import RunnelTestSupport

/// One `runneld` child process, listening on an ephemeral port of 127.0.0.1.
///
/// `init` writes the config to a fresh temporary directory,
/// spawns the daemon with `--listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --config <file>`, and
/// waits for the log line `... listening on 127.0.0.1:PORT` (stdout and stderr are both
/// collected); the HTTP front door's port is in the line before it. The Python tests' one
/// starter (`Tests/blackbox/runneld_process.py`, `Daemon`) starts runneld the same way: keep the
/// two in step.
///
/// Thread rules: owned by one test; not thread-safe. Lifetime rule: the process is killed and
/// reaped on deinit, so no daemon outlives its test, and the directory is removed.
final class RunneldProcess {
    static let startupTimeout: Duration = .seconds(15)

    let pid: pid_t
    /// The port the daemon reported it is bound to.
    let port: UInt16
    /// The config file, which `rewriteConfig` replaces before a `SIGHUP`.
    let configPath: String
    private let directory: String?
    private let output: OutputCollector
    private var exitStatus: Int32?

    /// The event loops each daemon gets unless a test says otherwise: `RUNNEL_TEST_LOOPS`, else 1
    /// (`make test` runs the suites once with 1 and once with 4).
    static let testLoops = ProcessInfo.processInfo.environment["RUNNEL_TEST_LOOPS"] ?? "1"

    /// Starts the built `runneld` with `config`.
    convenience init(config: RunneldConfig = RunneldConfig(), extraArguments: [String] = []) throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("runneld-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let configPath = directory + "/runneld.toml"
        try config.toml.write(toFile: configPath, atomically: true, encoding: .utf8)
        let loops = extraArguments.contains("--loops") ? [] : ["--loops", Self.testLoops]
        let arguments =
            ["--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--config", configPath] + loops
            + extraArguments
        try self.init(
            executable: try RunneldBinary.path(), arguments: arguments, configPath: configPath, directory: directory)
    }

    /// Starts any executable that announces `listening on 127.0.0.1:PORT`; the harness's own
    /// tests use it with `/bin/sh`.
    init(executable: String, arguments: [String], configPath: String = "", directory: String? = nil) throws {
        self.configPath = configPath
        self.directory = directory
        var pipeFDs: [Int32] = [-1, -1]
        let spawned: pid_t = try ChildProcess.spawnLock.withLock {
            // pipe2 is not visible from Swift here; the lock keeps a parallel test's spawn from
            // inheriting this pipe between pipe() and FD_CLOEXEC (which would delay our EOF).
            guard pipe(&pipeFDs) == 0 else { throw SystemCallError("pipe", errno) }
            _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)
            do {
                return try ChildProcess.spawn(
                    executable, arguments, stdin: .file("/dev/null", flags: O_RDONLY),
                    stdout: .descriptor(pipeFDs[1]), stderr: .descriptor(pipeFDs[1]))
            } catch {
                close(pipeFDs[0])
                close(pipeFDs[1])
                throw error
            }
        }
        close(pipeFDs[1])
        pid = spawned
        output = OutputCollector(readFD: pipeFDs[0])
        let announced = output.firstMatch(timeout: RunneldProcess.startupTimeout, RunneldProcess.listeningPort)
        guard let announced else {
            // Stop the child before reporting; deinit does not run for a failed init.
            Glibc.kill(spawned, SIGKILL)
            var status: Int32 = 0
            waitpid(spawned, &status, 0)
            if let directory { try? FileManager.default.removeItem(atPath: directory) }
            let lines = output.allLines.suffix(40).joined(separator: "\n")
            throw HarnessError.launch("\(executable) did not report a listening address; output:\n\(lines)")
        }
        port = announced
    }

    deinit {
        kill()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Every line the daemon wrote so far (stderr and stdout merged).
    var stderrLines: [String] { output.allLines }

    /// Opens a new client connection to the daemon.
    func connect(receiveBufferSize: Int32? = nil) throws -> BlockingTCPClient {
        try BlockingTCPClient(port: Int(port), receiveBufferSize: receiveBufferSize)
    }

    /// A connection to the HTTP front door, whose port the line `serving HTTP on
    /// 127.0.0.1:PORT` gave.
    func connectHTTP() throws -> BlockingTCPClient {
        let port = output.allLines.lazy.compactMap { line in
            line.firstMatch(of: /serving HTTP on 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) }
        }.first
        guard let port else { throw HarnessError.launch("runneld did not say where it serves HTTP") }
        return try BlockingTCPClient(port: port)
    }

    /// The port of another listener the daemon announced as `LABEL 127.0.0.1:PORT` (such as
    /// `listening with TLS on`, which the protocol's own `listening on` line follows).
    func announcedPort(_ label: String) -> UInt16? {
        output.allLines.lazy.compactMap { line -> UInt16? in
            guard let found = line.range(of: label + " 127.0.0.1:") else { return nil }
            return UInt16(line[found.upperBound...].prefix { $0.isNumber })
        }.first
    }

    /// Replaces the config file (atomically, so a reload never reads half a file).
    func rewriteConfig(_ config: RunneldConfig) throws {
        try config.toml.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    func signal(_ signal: Int32) {
        if exitStatus == nil { Glibc.kill(pid, signal) }
    }

    /// SIGSTOP, and waits until every thread has stopped: kill(2) returns before a loop running
    /// on another core stops, which could still answer a request sent meanwhile (the Python
    /// tests' `freeze`).
    func freeze(timeout: Duration = .seconds(5)) throws {
        signal(SIGSTOP)
        let deadline = Deadline(timeout)
        while true {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            let states = tasks.compactMap { task in
                (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8))
                    .flatMap { $0.split(separator: ")").last?.split(separator: " ").first }
            }
            if !states.isEmpty && states.allSatisfy({ $0 == "T" }) { return }
            if deadline.hasPassed {
                throw HarnessError.timeout("runneld pid \(pid)'s threads not all stopped: \(states)")
            }
            pollPause(.milliseconds(5))
        }
    }

    /// Waits for the process to exit and returns its exit status, or 128 + the signal number if a
    /// signal ended it. Throws if it is still running at the deadline.
    func waitForExit(timeout: Duration = .seconds(5)) throws -> Int32 {
        let deadline = Deadline(timeout)
        while true {
            if let status = reap() { return status }
            if deadline.hasPassed { throw HarnessError.timeout("runneld pid \(pid) still running") }
            pollPause(.milliseconds(10))
        }
    }

    /// Kills the process if it still runs and reaps it.
    func kill() {
        guard exitStatus == nil else { return }
        if reap() != nil { return }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        exitStatus = ChildProcess.exitStatus(status)
    }

    /// Collects the exit status without blocking; nil while the process runs.
    private func reap() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        guard result == pid else { return nil }
        exitStatus = ChildProcess.exitStatus(status)
        return exitStatus
    }

    /// The port in a line such as `info: listening on 127.0.0.1:40123`.
    static func listeningPort(in line: String) -> UInt16? {
        guard line.lowercased().contains("listening on"),
            let match = line.firstMatch(of: /127\.0\.0\.1:(\d+)/),
            let port = UInt16(match.1), port != 0
        else { return nil }
        return port
    }
}
