import Foundation
import Runnel
import RunnelTestSupport

/// The harness's one way to start a child process (`runneld`, `runnel`, `/bin/sh`) and to read
/// how it ended.
enum ChildProcess {
    /// Serialises spawning across parallel tests, with whatever a caller does to its own
    /// descriptors just before (`RunneldProcess`'s pipe), so no child inherits a descriptor
    /// meant for another.
    static let spawnLock = Lock()

    /// Where one of the child's standard descriptors comes from.
    enum Stream {
        /// The file at a path, opened with `flags` (created with mode 0600 under `O_CREAT`).
        case file(String, flags: Int32)
        /// A descriptor of ours, duplicated.
        case descriptor(Int32)
    }

    /// `posix_spawn` with the three standard descriptors from `stdin`, `stdout` and `stderr`,
    /// `environment` (ours when nil), and a clean signal state (nothing blocked; HUP, TERM,
    /// INT, PIPE at their defaults) whatever thread the test runs on.
    static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Stream,
        stdout: Stream, stderr: Stream
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (descriptor, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .file(let path, let flags):
                posix_spawn_file_actions_addopen(&actions, descriptor, path, flags, 0o600)
            case .descriptor(let ours):
                posix_spawn_file_actions_adddup2(&actions, ours, descriptor)
            }
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGHUP, SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { variables in
            variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        }
        defer { envp?.forEach { free($0) } }
        var pid: pid_t = 0
        let result: Int32
        if let envp {
            result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        } else {
            result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        }
        guard result == 0 else { throw SystemCallError("posix_spawn \(executable)", result) }
        return pid
    }

    /// A `waitpid` status as a shell reports it: the exit code, or 128 plus the signal's number.
    static func exitStatus(_ status: Int32) -> Int32 {
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }
}
