import Foundation
import RunnelTestSupport

/// `Tests/blackbox/silent_network.py` in front of a runneld port (docs/clients.md, checklist item
/// 12): `silence()` makes the connections open at that moment lose everything, both ways, without
/// closing (a network that drops a connection without a word); connections made later are
/// forwarded. The Python and JavaScript checklists use the same script.
///
/// Thread rules: any thread. Lifetime rule: the proxy runs until `stop()`, or until this
/// process ends (its standard input is a pipe of ours, whose end stops it).
final class SilentNetwork: Sendable {
    private let pid: pid_t
    /// Our end of the proxy's standard input.
    private let input: Int32
    /// The proxy's own port.
    let port: Int

    init(upstream: Int) throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { root.deleteLastPathComponent() }
        let script = root.appendingPathComponent("Tests/blackbox/silent_network.py").path
        var toProxy: [Int32] = [-1, -1]
        var fromProxy: [Int32] = [-1, -1]
        pid = try ChildProcess.spawnLock.withLock {
            guard pipe(&toProxy) == 0, pipe(&fromProxy) == 0 else { throw SystemCallError("pipe", errno) }
            for end in [toProxy[1], fromProxy[0]] { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            return try ChildProcess.spawn(
                "/usr/bin/env", ["python3", script, String(upstream)], stdin: .descriptor(toProxy[0]),
                stdout: .descriptor(fromProxy[1]), stderr: .descriptor(2))
        }
        close(toProxy[0])
        close(fromProxy[1])
        input = toProxy[1]
        let output = FileHandle(fileDescriptor: fromProxy[0], closeOnDealloc: true)
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")), let byte = try output.read(upToCount: 1), !byte.isEmpty {
            line += byte
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(text) else {
            kill(pid, SIGKILL)
            close(input)
            throw HarnessError.launch("silent_network.py did not say its port: \(text)")
        }
        self.port = port
    }

    func silence() { kill(pid, SIGUSR1) }

    func stop() {
        kill(pid, SIGTERM)
        close(input)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
